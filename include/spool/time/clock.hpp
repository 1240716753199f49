// spool::time: the clock timers use, and its pause / advance controls for tests.
#pragma once

#include <chrono>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/time/sleep.hpp"

namespace spool::time {

/// Now, on the clock of the current runtime (paused, for a runtime whose clock is), or the
/// steady clock outside every runtime. Deadlines given to sleep_until should come from it.
SPOOL_API Instant now();

/// Pauses the current runtime's clock: from now on time moves only by advance, or jumps to
/// the next timer's deadline when every task waits (auto-advance; never while a blocking
/// call runs). Throws std::logic_error outside a runtime, on a multi-thread runtime (its
/// workers cannot tell that every task waits — as in tokio, pause requires a current-thread
/// runtime), or when the clock is paused already.
SPOOL_API void pause();
/// Lets the paused clock run again, at the steady clock's rate, from where it stands.
/// Throws std::logic_error when it is not paused (or outside a current-thread runtime).
SPOOL_API void resume();

/// The future of advance(): moves the clock on, fires the timers that came due, and yields
/// once. Awaited by a spawned task, the tasks the timers woke (queued before it) run before
/// it goes on; awaited by a current-thread runtime's block_on root, at most one scheduler
/// batch (event_interval tasks) runs before the root is polled again.
class SPOOL_API Advance {
 public:
  /// Advances at the first poll, returns ready at the second.
  Poll<void> poll(Context& cx);
  /// Built by spool::time::advance.
  explicit Advance(std::chrono::nanoseconds by) noexcept : by_(by) {}

 private:
  std::chrono::nanoseconds by_;
  bool advanced_ = false;
};

/// `co_await spool::time::advance(d)` moves the current runtime's paused clock `d` forward.
/// Throws (at the first poll) std::logic_error when the clock is not paused, and
/// std::invalid_argument for a negative `d`.
inline Advance advance(std::chrono::nanoseconds d) noexcept { return Advance(d); }

}  // namespace spool::time
