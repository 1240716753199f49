// spool::sleep, spool::sleep_until and spool::Sleep: a future that completes at a deadline.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/timer_entry.hpp"

namespace spool {

namespace detail {
class Driver;
class IoSource;
}  // namespace detail

/// A point in time on spool's clock: the steady clock, or a runtime's paused test clock
/// (see spool::time::now).
using Instant = std::chrono::steady_clock::time_point;

/// Thrown by a timer polled after the runtime it belongs to shut down.
class SPOOL_API TimerShutdown : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A future that completes (with no value) once its deadline has passed on the clock of the
/// runtime it was made under (or the process-wide timer driver, made outside every runtime).
/// The timer is registered with the time driver at the first poll and unregistered when the
/// Sleep is destroyed or reset (O(1) both). Polled by a spool runtime or by spool::block_on,
/// the executing thread parks in the time driver (Context::install_reactor); polled by any
/// other executor (no reactor slot, or one holding another reactor), a background thread
/// of the driver fires it (a multi-thread runtime's workers always drive theirs). While
/// armed it must not move (the driver links it in place): moving it then throws
/// std::logic_error.
class SPOOL_API Sleep {
 public:
  /// Ready once the deadline has passed. Throws TimerShutdown when the timer's runtime
  /// shut down before that.
  Poll<void> poll(Context& cx);
  /// Moves the deadline (earlier or later), also after the Sleep completed: it is then
  /// pending again until `deadline`. A task waiting on it is woken at the new deadline, or
  /// at once if `deadline` has passed.
  void reset(Instant deadline);
  /// reset to `duration` from now on this Sleep's own clock (as spool::sleep(duration)
  /// counts it; a negative duration is now): one Sleep reused for deadline after deadline.
  void reset_after(std::chrono::nanoseconds duration);
  /// The instant the Sleep completes at.
  Instant deadline() const noexcept { return deadline_; }
  /// True once the driver fired the timer (the deadline passed while it was registered).
  bool is_elapsed() const noexcept;

  /// Moves a Sleep that is not armed; throws std::logic_error for one that is (a Sleep is
  /// armed by a poll that finds it pending, and by a reset after such a poll, until it
  /// fires or is reset to a passed deadline). Polling, resetting or reading now() of the
  /// moved-from Sleep then throws std::logic_error.
  Sleep(Sleep&& other);
  Sleep& operator=(Sleep&&) = delete;
  Sleep(const Sleep&) = delete;
  Sleep& operator=(const Sleep&) = delete;
  /// Unregisters the timer (a cancel) if it is pending.
  ~Sleep();

 private:
  friend Sleep sleep_until(Instant deadline);
  friend Sleep sleep(std::chrono::nanoseconds duration);
  friend class Interval;
  friend class detail::IoSource;  // a socket's timers (the accept back-off) use its driver
  // `due`: the deadline has passed (the Sleep is ready at its first poll).
  Sleep(std::shared_ptr<detail::Driver> driver, Instant deadline, bool due) noexcept;
  // Now on the clock of this timer's driver.
  Instant now() const;

  std::shared_ptr<detail::Driver> driver_;
  Instant deadline_;
  detail::TimerEntry entry_;
};

/// A Sleep that completes `duration` from now (now as spool::time::now() tells it; a
/// negative duration completes at once).
SPOOL_API Sleep sleep(std::chrono::nanoseconds duration);
/// A Sleep that completes at `deadline` (at once, at its first poll, if it has passed).
SPOOL_API Sleep sleep_until(Instant deadline);

}  // namespace spool
