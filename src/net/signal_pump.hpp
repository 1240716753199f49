// SignalPump: the read end of spool::signal's self-pipe, drained by the thread in its driver.
#pragma once

#include <functional>
#include <memory>

#include "spool/core/context.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/io_source.hpp"

namespace spool::detail {

class Driver;

// The pipe spool::signal's handler writes to, registered with a driver. Its waker only asks
// the thread in the driver for a pump (IoDriver::request_after_wait_work): run inline, the
// pump would wake tasks inside whatever woke it (core/waker.hpp). After its wait, the thread
// in the driver drains the pipe until EAGAIN (registering the waker), then calls `deliver`.
class SignalPump {
 public:
  // Registers non-blocking `read_fd` with `driver`, which pumps at its next park and then on
  // every readable edge. It must outlive every park of `driver` (the process-wide one is
  // never destroyed). Throws std::system_error (read_fd closed) if registering fails.
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
