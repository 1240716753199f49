// SignalPump: the read end of spool::signal's self-pipe, drained by the thread in its driver.
#pragma once

#include <functional>
#include <memory>

#include "spool/core/context.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/io_source.hpp"

namespace spool::detail {

class Driver;

// The pipe that spool::signal's handler writes a byte to, registered with a driver. The
// waker of its registration only asks the thread in the driver for a pump
// (IoDriver::request_after_wait_work), as a wake must (core/waker.hpp): run inline, the pump
// would read the pipe and wake other tasks inside whatever woke it — a poll, a foreign
// thread, or the pump's own registration of that waker (its AtomicWaker wakes the
// registering side itself when a wake races with it). The thread in the driver pumps after its
// wait: it drains the pipe until EAGAIN (which registers the waker for the next edge), then calls
// `deliver`.
class SignalPump {
 public:
  // Takes `read_fd` (non-blocking) and registers it with `driver`; the thread in the driver
  // pumps at its next park (the first pump registers the waker), then whenever the pipe becomes
  // readable. Driving `driver` is the caller's business. The pump must outlive every park of
  // `driver` (the process-wide driver's is never destroyed). Throws std::system_error
  // (read_fd closed) when the pipe cannot be registered.
  SignalPump(const std::shared_ptr<Driver>& driver, int read_fd, std::function<void()> deliver);
  SignalPump(const SignalPump&) = delete;
  SignalPump& operator=(const SignalPump&) = delete;

  // The waker of the pipe's registration (tests wake it).
  const Waker& waker() const noexcept { return waker_; }

 private:
  void pump();  // by the thread in the driver only

  const std::function<void()> deliver_;
  IoSource reader_;
  IoWaiter waiter_;   // the pump's wait on reader_ (after it: leaves it first)
  ReactorSlot slot_;  // holds the driver: a pump that waits installs nothing, starts nothing
  Waker waker_;
};

}  // namespace spool::detail
