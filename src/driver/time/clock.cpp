#include "driver/time/clock.hpp"

#include <stdexcept>

namespace spool::detail {

Clock::Clock(bool start_paused) {
  if (start_paused) pause();
}

Clock::time_point Clock::now() const {
  if (!adjusted_.load(std::memory_order_acquire)) return std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (paused_.load(std::memory_order_relaxed)) return paused_at_;
  // Saturating: a clock advanced to its end (advance(max), a sleep of max on auto-advance)
  // stays there after resume.
  return saturating_add(std::chrono::steady_clock::now(), offset_);
}

void Clock::pause() {
  std::lock_guard lock(mutex_);
  if (paused_.load(std::memory_order_relaxed)) {
    throw std::logic_error(
        "spool::time::pause: the clock is already paused; call spool::time::resume first");
  }
  paused_at_ = saturating_add(std::chrono::steady_clock::now(), offset_);
  paused_.store(true, std::memory_order_release);
  adjusted_.store(true, std::memory_order_release);
}

void Clock::resume() {
  std::lock_guard lock(mutex_);
  if (!paused_.load(std::memory_order_relaxed)) {
    throw std::logic_error(
        "spool::time::resume: the clock is not paused; call spool::time::pause (or build the "
        "runtime with Builder::start_paused(true)) first");
  }
  offset_ = paused_at_ - std::chrono::steady_clock::now();
  paused_.store(false, std::memory_order_release);
}

void Clock::advance(std::chrono::nanoseconds d) {
  if (d < std::chrono::nanoseconds::zero()) {
    throw std::invalid_argument(
        "spool::time::advance: the duration is negative; time only "
        "moves forward");
  }
  std::lock_guard lock(mutex_);
  if (!paused_.load(std::memory_order_relaxed)) {
    throw std::logic_error(
        "spool::time::advance: the clock is not paused; call spool::time::pause (or build the "
        "runtime with Builder::start_paused(true)) first");
  }
  paused_at_ = saturating_add(paused_at_, d);
}

void Clock::advance_to(time_point t) {
  std::lock_guard lock(mutex_);
  if (paused_.load(std::memory_order_relaxed) && t > paused_at_) paused_at_ = t;
}

}  // namespace spool::detail
