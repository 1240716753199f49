// spool::Sleep and spool::Interval: the timer futures, on a driver's TimeDriver.
#include "spool/time/sleep.hpp"

#include <algorithm>
#include <cstdint>

#include "driver/driver.hpp"
#include "driver/time/entry_waker.hpp"
#include "spool/time/interval.hpp"

namespace spool {

namespace {

[[noreturn]] void throw_shutdown() {
  throw TimerShutdown(
      "spool::Sleep: the runtime this timer was made under has shut down, so nothing will "
      "fire it; make timers under a runtime that outlives them (or outside every runtime)");
}

// A moved-from Sleep has no driver: using it is a misuse, never a null dereference.
detail::Driver& driver_of(const std::shared_ptr<detail::Driver>& driver) {
  if (!driver) {
    throw std::logic_error(
        "spool::Sleep used after it was moved from; use the Sleep it was moved into");
  }
  return *driver;
}

}  // namespace

Sleep::Sleep(std::shared_ptr<detail::Driver> driver, Instant deadline, bool due) noexcept
    : driver_(std::move(driver)), deadline_(deadline) {
  // Due already: ready at the first poll, never in a wheel.
  if (due) entry_.state.store(detail::TimerEntry::kFired, std::memory_order_relaxed);
}

Sleep::Sleep(Sleep&& other) : deadline_(other.deadline_) {
  // Not armed (never, or fired since: state_of's acquire load orders the driver's last
  // touch before the move), the driver holds no pointer to the entry.
  const std::uint32_t state = detail::state_of(other.entry_);
  if (state == detail::TimerEntry::kArmed) {
    throw std::logic_error(
        "spool::Sleep moved while armed: the time driver links it in place until it fires; "
        "move it before its first poll or once it is ready (or keep it where it is, e.g. in a "
        "coroutine frame)");
  }
  // Moved, not copied: a copy would cost two atomic RMWs on the driver's shared count.
  driver_ = std::move(other.driver_);
  entry_.shard = other.entry_.shard;  // polled before: a reset arms it at once, as there
  entry_.state.store(state, std::memory_order_relaxed);
  // Idle without a driver: polling `other` now throws (driver_of) instead of completing.
  other.entry_.state.store(detail::TimerEntry::kIdle, std::memory_order_relaxed);
}

Sleep::~Sleep() {
  if (driver_) driver_->time().disarm(entry_);
}

Instant Sleep::now() const { return driver_of(driver_).time().clock().now(); }

bool Sleep::is_elapsed() const noexcept {
  return detail::state_of(entry_) == detail::TimerEntry::kFired;
}

Poll<void> Sleep::poll(Context& cx) {
  using detail::TimerEntry;
  std::uint32_t state = detail::state_of(entry_);
  if (state == TimerEntry::kIdle) {
    // In no wheel: the waker goes in before arm links the entry (entry_waker.hpp).
    detail::set_waker_unshared(entry_, cx.waker());
    driver_of(driver_).time().arm(entry_, deadline_);
    state = detail::state_of(entry_);  // the driver may have fired it already
  } else if (state == TimerEntry::kArmed) {
    state = driver_->time().update_waker(entry_, cx.waker());
  }
  if (state == TimerEntry::kFired) return Poll<void>::ready();
  if (state == TimerEntry::kShutdown) throw_shutdown();
  // The executor parks in this driver, or something else must drive it.
  if (cx.reactor() != driver_.get() && !cx.install_reactor(driver_)) driver_->ensure_driven();
  return pending;
}

void Sleep::reset(Instant deadline) {
  using detail::TimerEntry;
  driver_of(driver_).time().disarm(entry_);
  if (detail::state_of(entry_) == TimerEntry::kShutdown) return;
  deadline_ = deadline;
  // Idle, or fired (unlinked: the driver no longer touches it).
  if (deadline <= now()) {
    entry_.state.store(TimerEntry::kFired, std::memory_order_relaxed);  // due: no wheel
    // No deadline is left for the driver to wake a waiting task at: wake it now (when the
    // task resetting is the one waiting, that is one spurious poll).
    if (std::optional<Waker> w = std::exchange(entry_.waker, std::nullopt)) std::move(*w).wake();
  } else {
    entry_.state.store(TimerEntry::kIdle, std::memory_order_relaxed);
    // Polled before: arm now, where it stays. Never polled: at the first poll.
    if (entry_.shard != nullptr) driver_->time().arm(entry_, deadline_);
  }
}

void Sleep::reset_after(std::chrono::nanoseconds duration) {
  reset(detail::saturating_add(now(), std::max(duration, std::chrono::nanoseconds::zero())));
}

Poll<Instant> Interval::poll_tick(Context& cx) {
  if (sleep_.poll(cx).is_pending()) return pending;
  const Instant scheduled = sleep_.deadline();
  const Instant now = sleep_.now();
  Instant next = detail::saturating_add(scheduled, period_);
  if (now >= next) {  // the following tick is due already: this one was taken late
    switch (behavior_) {
      case MissedTickBehavior::kBurst:
        break;
      case MissedTickBehavior::kDelay:
        next = detail::saturating_add(now, period_);
        break;
      case MissedTickBehavior::kSkip: {
        // now - scheduled in unsigned: a start long before boot (Instant::min()) is more
        // than a signed count apart from now. now > scheduled and period_ > 0.
        const auto behind = static_cast<std::uint64_t>(now.time_since_epoch().count()) -
                            static_cast<std::uint64_t>(scheduled.time_since_epoch().count());
        const auto into_period = behind % static_cast<std::uint64_t>(period_.count());
        next = detail::saturating_add(
            now, period_ - std::chrono::nanoseconds(static_cast<std::int64_t>(into_period)));
        break;
      }
    }
  }
  sleep_.reset(next);
  return Poll<Instant>::ready(scheduled);
}

void Interval::reset() { sleep_.reset(detail::saturating_add(sleep_.now(), period_)); }

}  // namespace spool
