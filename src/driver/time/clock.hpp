// Clock: a time driver's source of "now" — the steady clock, or a paused test clock.
#pragma once

#include <chrono>
#include <mutex>
#include <type_traits>

#include "spool/detail/atomic.hpp"
#include "spool/detail/saturating_add.hpp"

namespace spool::detail {

// The steady clock, which tests may pause: while paused, time moves only by advance (or by
// the driver's auto-advance, time_driver.hpp); after resume it runs at the steady clock's
// rate again from where it stood (so it never goes backwards).
class Clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  explicit Clock(bool start_paused);

  // Any thread.
  time_point now() const;
  bool is_paused() const noexcept { return paused_.load(std::memory_order_acquire); }
  // Throw std::logic_error with an explanation on misuse (pause twice, resume or advance
  // when not paused).
  void pause();
  void resume();
  void advance(std::chrono::nanoseconds d);
  // Moves a paused clock forward to `t` (no-op if it stands there or later already).
  void advance_to(time_point t);

 private:
  // True once pause was called: until then now() is the steady clock with no lock.
  // Set (release) under mutex_ by the first pause; read (acquire) by now().
  Atomic<bool> adjusted_{false};
  // Mirrors paused_now_.has_value() for readers that take no lock; written under mutex_
  // (release), read with acquire.
  Atomic<bool> paused_{false};
  mutable std::mutex mutex_;
  // Guarded by mutex_: while paused, the time it stands at; while running, the offset
  // added to the steady clock (the time spent paused, minus what advance moved on).
  time_point paused_at_{};
  std::chrono::nanoseconds offset_{0};
};

}  // namespace spool::detail
