// The state a spool timer shares with the time driver, embedded in every spool::Sleep.
#pragma once

#include <cstdint>
#include <optional>

#include "spool/core/waker.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/timer_node.hpp"

namespace spool::detail {

/// One timer: its wheel node, the waker of the task that waits on it, and whether it fired.
/// Owned by the future that waits (it must not move while armed); the time driver
/// (src/driver/time/time_driver.hpp) links it into one of its shards and fires it. Who may
/// touch what, and when: src/driver/time/entry_waker.hpp.
struct TimerEntry : TimerNode {
  /// Not in a wheel: never armed, or disarmed (cancelled, reset).
  static constexpr std::uint32_t kIdle = 0;
  /// Linked in its shard's wheel, waiting for its deadline.
  static constexpr std::uint32_t kArmed = 1;
  /// The deadline passed: unlinked by the driver, which took `waker` to wake it.
  static constexpr std::uint32_t kFired = 2;
  /// The driver shut down (its runtime is gone) before the deadline.
  static constexpr std::uint32_t kShutdown = 3;

  /// Written by the driver under the shard's lock (arm, disarm, fire, shutdown), and by the
  /// owning future while the entry is in no wheel (made due, reset; relaxed: nobody else
  /// touches it then). The driver's stores of kFired / kShutdown are releases that pair with
  /// the acquire loads of the future's poll (which then returns ready without the lock) and
  /// of disarm (which then returns without the lock, and the entry may be freed).
  Atomic<std::uint32_t> state{kIdle};
  /// The waiting task's waker (empty: none). Armed, it is guarded by the shard's lock;
  /// otherwise it is the owning future's alone.
  std::optional<Waker> waker;
  /// The shard whose wheel links the entry (opaque to the future); set when first armed.
  void* shard = nullptr;
};

}  // namespace spool::detail
