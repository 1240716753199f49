// spool::interval: a stream of ticks at a fixed period.
#pragma once

#include <chrono>
#include <optional>

#include "spool/time/sleep.hpp"

namespace spool {

/// What an Interval does when ticks were missed (the task was busy, or the runtime
/// stalled, past the next tick's instant).
enum class MissedTickBehavior {
  /// Ticks come at once, one after the other, until the schedule is caught up; the
  /// schedule stays start + k × period (tokio's Burst; the default).
  kBurst,
  /// The next tick comes one period after the late one was taken: the schedule shifts.
  kDelay,
  /// The missed ticks are dropped: the next tick is the schedule's next one after now.
  kSkip,
};

/// Ticks at start, start + period, start + 2 × period, ... `co_await iv.tick()` completes at
/// the next tick and gives its scheduled instant. A tick is missed when it is taken after
/// the instant the following one was due; the MissedTickBehavior then decides the next.
/// Built by spool::interval / spool::interval_at; must not move once ticked.
class SPOOL_API Interval {
 public:
  /// The future of one tick (it refers to the Interval, which must outlive it).
  class Tick {
   public:
    /// Ready at the next tick, with its scheduled instant.
    Poll<Instant> poll(Context& cx) { return interval_->poll_tick(cx); }
    /// The next tick of `interval`.
    explicit Tick(Interval& interval) noexcept : interval_(&interval) {}

   private:
    Interval* interval_;
  };

  /// The next tick, as a future.
  Tick tick() noexcept { return Tick(*this); }
  /// Ready at the next tick, with its scheduled instant (for hand-written futures).
  Poll<Instant> poll_tick(Context& cx);
  /// The Stream interface (spool/stream/stream.hpp): the next tick's scheduled instant, as
  /// poll_tick; the stream never ends.
  Poll<std::optional<Instant>> poll_next(Context& cx) {
    Poll<Instant> tick = poll_tick(cx);
    if (tick.is_pending()) return pending;
    return Poll<std::optional<Instant>>::ready(tick.value());
  }
  /// Restarts the schedule: the next tick comes one period from now.
  void reset();
  /// The period between ticks.
  std::chrono::nanoseconds period() const noexcept { return period_; }
  /// What happens to missed ticks (default kBurst).
  MissedTickBehavior missed_tick_behavior() const noexcept { return behavior_; }
  /// Sets what happens to missed ticks.
  void set_missed_tick_behavior(MissedTickBehavior b) noexcept { behavior_ = b; }

 private:
  friend Interval interval_at(Instant start, std::chrono::nanoseconds period);
  Interval(Sleep sleep, std::chrono::nanoseconds period) noexcept
      : sleep_(std::move(sleep)), period_(period) {}

  Sleep sleep_;  // completes at the next tick
  std::chrono::nanoseconds period_;
  MissedTickBehavior behavior_ = MissedTickBehavior::kBurst;
};

/// Ticks at once, then every `period`. Throws std::invalid_argument for a period ≤ 0.
SPOOL_API Interval interval(std::chrono::nanoseconds period);
/// Ticks at `start`, then every `period`. Throws std::invalid_argument for a period ≤ 0.
SPOOL_API Interval interval_at(Instant start, std::chrono::nanoseconds period);

}  // namespace spool
