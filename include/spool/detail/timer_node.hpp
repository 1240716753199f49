// The timer wheel's intrusive node, embedded in every spool::Sleep.
#pragma once

#include <cstdint>

#include "spool/config.hpp"

namespace spool::detail {

/// One timer's place in a hierarchical timer wheel (src/driver/time/wheel.hpp). It lives
/// inside the future that waits (spool::Sleep), so arming a timer allocates nothing; the
/// future therefore must not move while the node is linked. All fields are touched only
/// under the lock of the wheel that links the node.
struct TimerNode {
  TimerNode* prev = nullptr;  ///< neighbours in the wheel slot's list (null at the ends)
  TimerNode* next = nullptr;
  std::uint64_t when = 0;  ///< deadline, in the wheel's unit of time (set before linking)
  std::uint64_t tick = 0;  ///< `when` rounded up to the wheel's tick (set by the wheel)
  std::uint8_t level = 0;  ///< the wheel level whose slot lists the node (while linked)
  std::uint8_t slot = 0;   ///< the slot within that level (while linked)
  bool linked = false;     ///< in some slot's list
};

}  // namespace spool::detail
