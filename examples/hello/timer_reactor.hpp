// A tiny reactor for the demo: a timerfd and an eventfd behind one poll(2) call.
// It shows the reactor hook: a leaf future installs this reactor in its Context, and
// block_on then blocks in TimerReactor::park instead of a plain thread park.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <system_error>

#include "spool/spool.hpp"

namespace demo {

class TimerReactor : public spool::ReactorHook {
 public:
  TimerReactor()
      : timer_fd_(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)),
        wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (timer_fd_ < 0 || wake_fd_ < 0)
      throw std::system_error(errno, std::generic_category(), "timerfd/eventfd");
  }
  ~TimerReactor() override {
    ::close(timer_fd_);
    ::close(wake_fd_);
  }

  // Arms the one timer; `waker` is woken from park() when it fires.
  void arm(std::chrono::milliseconds after, const spool::Waker& waker) {
    timer_waker_.register_waker(waker);
    itimerspec spec{};
    spec.it_value.tv_sec = after.count() / 1000;
    spec.it_value.tv_nsec = (after.count() % 1000) * 1'000'000;
    ::timerfd_settime(timer_fd_, 0, &spec, nullptr);
  }
  bool fired() const { return fired_.load(std::memory_order_acquire); }

  void park(std::optional<std::chrono::nanoseconds> timeout) override {
    parks_.fetch_add(1, std::memory_order_relaxed);
    pollfd fds[2] = {{timer_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    int ms = timeout
                 ? static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*timeout).count())
                 : -1;
    ::poll(fds, 2, ms);
    std::uint64_t n = 0;
    if (fds[0].revents & POLLIN && ::read(timer_fd_, &n, sizeof n) == sizeof n) {
      fired_.store(true, std::memory_order_release);  // read by fired(), after the wake
      timer_waker_.wake();
    }
    if (fds[1].revents & POLLIN) (void)::read(wake_fd_, &n, sizeof n);
  }
  void unpark() noexcept override {
    unparks_.fetch_add(1, std::memory_order_relaxed);
    std::uint64_t one = 1;
    (void)::write(wake_fd_, &one, sizeof one);  // sticky until the next park reads it
  }

  int parks() const { return parks_.load(std::memory_order_relaxed); }
  int unparks() const { return unparks_.load(std::memory_order_relaxed); }

 private:
  int timer_fd_;
  int wake_fd_;
  spool::AtomicWaker timer_waker_;
  // Statistics only: relaxed increments, read after the fact.
  std::atomic<int> parks_{0};
  std::atomic<int> unparks_{0};
  // Set by park() (release) when the timer fired; read by the Sleep future (acquire).
  std::atomic<bool> fired_{false};
};

// A leaf future: completes once the reactor's timer fired. Installs the reactor in every
// poll's Context, and registers the latest waker every time it is polled.
class Sleep {
 public:
  Sleep(std::shared_ptr<TimerReactor> reactor, std::chrono::milliseconds d)
      : reactor_(std::move(reactor)), d_(d) {}
  spool::Poll<void> poll(spool::Context& cx) {
    if (reactor_->fired()) return spool::Poll<void>::ready();
    cx.install_reactor_or_throw(reactor_);
    if (!armed_) {
      reactor_->arm(d_, cx.waker());
      armed_ = true;
    }
    return spool::pending;
  }

 private:
  std::shared_ptr<TimerReactor> reactor_;
  std::chrono::milliseconds d_;
  bool armed_ = false;
};

}  // namespace demo
