// IoPoller: what an I/O driver needs of the kernel interface it waits on (epoll or io_uring).
#pragma once

#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "driver/io/scheduled_io.hpp"

namespace spool::detail {

// One readiness report: the bits to add to `io`, and whether it is the registration's last
// (the poller reports nothing more for it: after disarm, or when the kernel ended the watch
// — on its own, and then `error` is 0, or failing with that errno).
struct IoEvent {
  ScheduledIo* io;
  std::uint32_t bits;
  bool last;
  int error = 0;
};

// The kernel side of an IoDriver. arm and disarm are called under the driver's registry
// mutex, by any thread; wait only by the thread in the driver; wake by any thread. Constructors
// throw std::system_error when the kernel refuses the interface.
class IoPoller {
 public:
  virtual ~IoPoller() = default;
  // Watches `io`'s fd for read and write readiness; throws std::system_error (naming `what`).
  // The driver also calls it from its wait, to watch again a registration whose watch the
  // kernel ended on its own (a `last` event with no error).
  virtual void arm(ScheduledIo* io, const char* what) = 0;
  // Stops watching `io` (its fd is still open). True if `io` may be freed before the thread in the
  // driver's next wait; false if the poller reports one more event for it, marked `last`.
  virtual bool disarm(ScheduledIo* io) noexcept = 0;
  // Blocks until readiness, a wake() or the timeout (null: none); appends what it saw to
  // `out` (a wake is consumed, not reported). Spurious returns are allowed.
  virtual void wait(const timespec* timeout, std::vector<IoEvent>& out) = 0;
  // Ends the current wait, or the next one if none runs (sticky).
  virtual void wake() noexcept = 0;
};

// The readiness bits of a poll(2) / epoll event mask (the two share their values).
std::uint32_t readiness_of(std::uint32_t events) noexcept;

// An eventfd to interrupt a wait. It starts signalled: the first wait returns at once, since
// an unpark may have gone to the parker below before the I/O layer switched on (see IoDriver).
class WakeEvent {
 public:
  WakeEvent();  // throws std::system_error
  ~WakeEvent();
  WakeEvent(const WakeEvent&) = delete;
  WakeEvent& operator=(const WakeEvent&) = delete;
  int fd() const noexcept { return fd_; }
  void signal() noexcept;
  void drain() noexcept;  // so that the next signal makes a new edge

 private:
  int fd_;
};

// Throws std::system_error(err) with the message `what`.
[[noreturn]] void throw_errno(int err, const std::string& what);

// The epoll poller; throws std::system_error when epoll_create1 or eventfd fails.
std::unique_ptr<IoPoller> make_epoll_poller();
// What a test may change in the io_uring poller (tests/internal/uring_poller_test.cpp).
struct UringPollerOptions {
  // Asked before each submission: while it says true, the submission fails with EAGAIN and
  // the kernel takes nothing, as when it is short of memory.
  std::function<bool()> refuse_submissions;
  // False: removals take the asynchronous path (IORING_OP_POLL_REMOVE) of kernels before
  // 6.0, which have no synchronous cancel.
  bool sync_cancel = true;
};
// The io_uring poller. Throws std::system_error when this kernel (or a seccomp filter)
// refuses io_uring, when it lacks what the poller needs (Linux 5.13), or when spool was
// built without liburing.
std::unique_ptr<IoPoller> make_uring_poller(UringPollerOptions options = {});
// Whether make_uring_poller can work here: sets up a two-entry ring and closes it again.
// Throws what make_uring_poller would.
void probe_uring();

}  // namespace spool::detail
