// EventfdReactor: a minimal spool::ReactorHook on an eventfd, with counters, for tests.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <system_error>

#include "spool/core/reactor_hook.hpp"

namespace spool_test {

// park() waits with poll() until the eventfd is readable (or the timeout passes) and drains
// it; unpark() writes to the eventfd, so an unpark before a park makes that park return at
// once (the eventfd counter is the sticky token). The counters let tests prove that a
// thread parked here (not by timing): parks() is incremented before blocking.
class EventfdReactor final : public spool::ReactorHook {
 public:
  EventfdReactor() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  }
  ~EventfdReactor() override { ::close(fd_); }
  EventfdReactor(const EventfdReactor&) = delete;
  EventfdReactor& operator=(const EventfdReactor&) = delete;

  void park(std::optional<std::chrono::nanoseconds> timeout) override {
    parks_.fetch_add(1);
    int ms = -1;
    if (timeout) {
      // Round up, so that a short timeout does not become a busy loop of zero-waits.
      ms = static_cast<int>((timeout->count() + 999'999) / 1'000'000);
    }
    pollfd p{fd_, POLLIN, 0};
    // EINTR: a spurious return, which the ReactorHook contract allows.
    if (::poll(&p, 1, ms) > 0) {
      std::uint64_t tokens = 0;
      if (::read(fd_, &tokens, sizeof tokens) == static_cast<ssize_t>(sizeof tokens)) {
        woken_.fetch_add(1);
      }
    }
  }

  void unpark() noexcept override {
    unparks_.fetch_add(1);
    const std::uint64_t one = 1;
    // Cannot fail short of a counter overflow (2^64 - 1 unread unparks).
    if (::write(fd_, &one, sizeof one) < 0) {
    }
  }

  int parks() const { return parks_.load(); }      // park() calls (counted on entry)
  int unparks() const { return unparks_.load(); }  // unpark() calls
  int woken() const { return woken_.load(); }      // parks that consumed an unpark token

 private:
  int fd_;
  // Counters, all written with seq_cst fetch_add: parks_ and woken_ by park() on the parking
  // thread, unparks_ by unpark() on any thread; read by parks(), unparks(), woken() (seq_cst).
  // spin_until(parks() >= 1) pairs with park()'s add to learn a thread is about to block;
  // other reads follow a join or block_on, which puts the adds in order before them.
  std::atomic<int> parks_{0};
  std::atomic<int> unparks_{0};
  std::atomic<int> woken_{0};
};

}  // namespace spool_test
