// saturating_add: an instant plus a duration, clamped to the steady clock's range.
#pragma once

#include <chrono>
#include <type_traits>

#include "spool/config.hpp"

namespace spool::detail {

/// `t + d`, clamped to the clock's range (a deadline of "never" stays representable), for
/// any `t`: an instant before the clock's epoch (before boot, on the steady clock) too.
inline std::chrono::steady_clock::time_point saturating_add(std::chrono::steady_clock::time_point t,
                                                            std::chrono::nanoseconds d) noexcept {
  using tp = std::chrono::steady_clock::time_point;
  static_assert(std::is_same_v<tp::duration, std::chrono::nanoseconds>);
  tp::rep sum;
  if (__builtin_add_overflow(t.time_since_epoch().count(), d.count(), &sum)) {
    return d.count() > 0 ? tp::max() : tp::min();
  }
  return tp(std::chrono::nanoseconds(sum));
}

}  // namespace spool::detail
