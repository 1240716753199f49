// TimerWheel: a hierarchical timer wheel over intrusive TimerNodes (no clock, no lock).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "spool/detail/timer_node.hpp"

namespace spool::detail {

// Timers keyed by an abstract tick count (the time driver maps its clock to ticks).
// Insert and remove are O(1); finding the next expiration is O(levels); a poll costs O(levels)
// per occupied slot it reaches plus O(1) per node it fires or cascades, however far it jumps.
//
// Layout: kLevels levels of kSlots slots; a slot of level L covers 64^L ticks, so the wheel
// spans 64^kLevels ticks (2^36: about 795 days at 1 ms a tick). Each slot is a doubly-linked
// list of nodes (a head pointer), and each level has a bitmap of its non-empty slots.
//
// Invariants (between calls; `cur(L)` is the level-L slot that contains elapsed()):
//   - A node of level L < kLevels-1 agrees with elapsed() on every tick bit above level L's
//     (it expires within the current level-L rotation) and sits in the slot containing `when`.
//   - The top level is a ring of the 63 top-level slots after cur(top); a node due beyond
//     them sits in the last (slot cur - 1), keeping its true `when`, and is placed again by
//     that `when` when the slot is reached (before `when`: it never fires early).
//   - Slot cur(L) is empty at every level, and a node's slot starts at or before its `when`.
// Hence the earliest non-empty slot of the lowest non-empty level starts first, and a node is
// never handed out before its `when`.
//
// Not thread-safe: the owner serialises every call (the time driver holds its lock).
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

  /// The earliest tick at which poll can hand out a node, or nullopt if the wheel is empty;
  /// O(levels). Never later than the earliest `when` linked, and earlier when that node sits
  /// in a higher level's slot (a poll reaching that tick moves it down without firing it).
  std::optional<std::uint64_t> next_expiration() const noexcept;

  /// Advances elapsed() to `now` (a no-op when `now <= elapsed()`) and calls
  /// `on_expired(TimerNode*)` once for every linked node with `when <= now`, unlinked
  /// before the call. Order: nondecreasing `when`, within this poll and across polls; nodes
  /// with equal `when` come out in no specified order. Jumps from one occupied slot to the
  /// next, never tick by tick. `on_expired` must not call into this wheel: it runs in the
  /// middle of the poll.
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
