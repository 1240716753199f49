// TimerWheel: a hierarchical timer wheel over intrusive TimerNodes (no clock, no lock).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "spool/detail/timer_node.hpp"

namespace spool::detail {

// Timers keyed by ticks. Insert and remove O(1); next expiration O(levels); a poll O(levels)
// per occupied slot it reaches plus O(1) per node, however far it jumps. A level-L slot
// covers 64^L ticks: the wheel spans 2^36 ticks (795 days at 1 ms). Each slot is a list;
// each level has a bitmap of its non-empty slots.
//
// Invariants (between calls; `cur(L)` is the level-L slot that contains elapsed()):
//   - A node of level L < kLevels-1 agrees with elapsed() on every tick bit above level L's
//     (it expires within the current level-L rotation) and sits in the slot containing `when`.
//   - The top level is a ring of the 63 top-level slots after cur(top); a node due beyond
//     them sits in the last (slot cur - 1), keeping its true `when`, and is placed again by
//     that `when` when the slot is reached (before `when`: it never fires early).
//   - Slot cur(L) is empty at every level, and a node's slot starts at or before its `when`.
// Hence the lowest non-empty level's first slot starts first, and no node fires early.
// Not thread-safe: the time driver holds its shard's lock.
class TimerWheel {
 public:
  /// Levels of the hierarchy, and slots per level (64: one bit each in a level's bitmap).
  static constexpr unsigned kLevels = 6;
  static constexpr unsigned kSlots = 64;

  /// The tick the wheel has advanced to: every node with `when <= elapsed()` has been handed
  /// out by poll (or was never linked). Starts at 0.
  std::uint64_t elapsed() const noexcept { return elapsed_; }

  /// Links `node` (`node->when` set, `node` not linked) and returns true; O(1). Returns false
  /// and leaves `node` unlinked when `node->when <= elapsed()`: it is already due, and the
  /// caller completes it at once. `node` must stay put until it is removed or handed out.
  bool insert(TimerNode* node) noexcept;

  /// Unlinks `node`, which must be linked in this wheel; O(1). It will not be handed out.
  void remove(TimerNode* node) noexcept;

  /// The earliest tick at which poll may hand out a node (nullopt: empty). Earlier than the
  /// earliest `when` if that node sits in a higher level (the poll only moves it down).
  std::optional<std::uint64_t> next_expiration() const noexcept;

  /// Advances elapsed() to `now` (a no-op when `now <= elapsed()`) and calls
  /// `on_expired(TimerNode*)` for every node with `when <= now`, unlinked first, in
  /// nondecreasing `when` (ties unordered). It jumps between occupied slots, never tick by
  /// tick. `on_expired` must not call into this wheel.
  template <class F>
  void poll(std::uint64_t now, F&& on_expired);

  /// True when no node is linked.
  bool empty() const noexcept;

 private:
  // The next occupied slot (the lowest non-empty level's first occupied slot after cur).
  struct Expiration {
    unsigned level;
    unsigned slot;
    std::uint64_t deadline;  // the tick at which the slot starts
  };
  std::optional<Expiration> next_slot() const noexcept;

  // Unlinks nodes from the slot of `exp` (which elapsed_ has reached) until one is due and
  // returns it, moving those not yet due to their place relative to elapsed_ (always another
  // slot); nullptr once the slot is empty.
  TimerNode* take_due(const Expiration& exp) noexcept;

  void link(TimerNode* node) noexcept;  // node->when > elapsed_
  void unlink(TimerNode* node) noexcept;

  std::uint64_t elapsed_ = 0;
  std::array<std::uint64_t, kLevels> occupied_{};  // bit s of level L: slot s is non-empty
  std::array<std::array<TimerNode*, kSlots>, kLevels> heads_{};
};

template <class F>
void TimerWheel::poll(std::uint64_t now, F&& on_expired) {
  if (now <= elapsed_) return;
  // Each pass moves elapsed_ strictly forward (no node is ever placed in slot cur), so the
  // nodes handed out come in nondecreasing `when`.
  for (auto exp = next_slot(); exp && exp->deadline <= now; exp = next_slot()) {
    elapsed_ = exp->deadline;
    while (TimerNode* node = take_due(*exp)) on_expired(node);
  }
  elapsed_ = now;
}

}  // namespace spool::detail
