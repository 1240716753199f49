// The timer functions that need the current runtime: spool::sleep, sleep_until, interval,
// and spool::time's now / pause / resume / advance.
#include "spool/time.hpp"
#include "context/current.hpp"
#include "driver/thread_driver_ref.hpp"
#include "runtime/current_driver.hpp"
#include "runtime/shared.hpp"

namespace spool {

namespace detail {

const std::shared_ptr<Driver>& current_driver() {
  if (RuntimeShared* rt = current_runtime_ptr()) return rt->driver();
  return Driver::global();
}

}  // namespace detail

using detail::current_driver;

namespace {

// The driver of the current runtime, which must be a current-thread one (for pause, resume
// and advance; `what` names the caller in the error).
detail::Driver& pausable_driver(const char* what) {
  detail::RuntimeShared* rt = detail::current_runtime_ptr();
  if (rt == nullptr) {
    throw std::logic_error(std::string(what) +
                           " called outside a runtime: the paused clock belongs to a "
                           "current-thread runtime; call it from one of its tasks or its "
                           "block_on");
  }
  if (rt->current_thread() == nullptr) {
    throw std::logic_error(std::string(what) +
                           " called on a multi-thread runtime: its workers cannot tell that "
                           "every task waits, so its clock cannot be paused; build the "
                           "runtime with Builder::current_thread()");
  }
  return *rt->driver();
}

}  // namespace

Sleep sleep(std::chrono::nanoseconds duration) {
  const std::shared_ptr<detail::Driver>& driver =
      detail::ThreadDriverRef::for_timer(current_driver());
  const Instant now = driver->time().clock().now();
  const bool due = duration <= std::chrono::nanoseconds::zero();
  return Sleep(driver, due ? now : detail::saturating_add(now, duration), due);
}

Sleep sleep_until(Instant deadline) {
  const std::shared_ptr<detail::Driver>& driver =
      detail::ThreadDriverRef::for_timer(current_driver());
  return Sleep(driver, deadline, deadline <= driver->time().clock().now());
}

Interval interval(std::chrono::nanoseconds period) { return interval_at(time::now(), period); }

Interval interval_at(Instant start, std::chrono::nanoseconds period) {
  if (period <= std::chrono::nanoseconds::zero()) {
    throw std::invalid_argument("spool::interval: the period must be positive");
  }
  return Interval(sleep_until(start), period);
}

namespace time {

Instant now() { return current_driver()->time().clock().now(); }

// The thread in the driver and those waiting for it park differently on a paused clock: the
// unpark makes them look again.
void pause() {
  detail::Driver& driver = pausable_driver("spool::time::pause");
  driver.time().clock().pause();
  driver.unpark();
}

void resume() {
  detail::Driver& driver = pausable_driver("spool::time::resume");
  driver.time().clock().resume();
  driver.unpark();
}

Poll<void> Advance::poll(Context& cx) {
  if (advanced_) return Poll<void>::ready();
  pausable_driver("spool::time::advance").time().clock().advance(by_);
  advanced_ = true;
  current_driver()->time().process();  // wakes the tasks whose timers came due
  cx.waker().wake_by_ref();            // and lets them run before the caller goes on
  return pending;
}

}  // namespace time

}  // namespace spool
