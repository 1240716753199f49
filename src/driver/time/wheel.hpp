// TimerWheel: a hierarchical timer wheel over intrusive TimerNodes (no clock, no lock).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "spool/detail/timer_node.hpp"

namespace spool::detail {

// Timers keyed by deadlines in some unit of time (the time driver's: nanoseconds), placed
// by tick (tick_length units; tick t is the span ((t-1) x tick_length, t x tick_length]).
// Insert and remove O(1); next expiration O(levels); a poll O(levels) per occupied slot it
// reaches plus O(1) per node, however far it jumps. A level-L slot covers 64^L ticks: the
// wheel spans 2^36 ticks (795 days at 1 ms). Each slot is a list; each level has a bitmap
// of its non-empty slots.
//
// The nodes of one tick fire together, as soon as the latest of their deadlines has passed:
// never early, never after the tick's end, and a node alone in its tick at its very
// deadline, with one wake-up per tick as with deadlines rounded up to the tick.
//
// Invariants (between calls; current_ is the first tick that has not ended as far as the
// wheel knows, and cur(L) the level-L slot that contains it):
//   - Every linked node's tick is at least current_. A node of level L < kLevels-1 agrees with
//     current_ on every tick bit above level L's (it expires within the current level-L
//     rotation) and sits in the slot containing its tick.
//   - The top level is a ring of the 63 top-level slots after cur(top); a node due beyond
//     them sits in the last (slot cur - 1), keeping its true tick, and is placed again by
//     that tick when the slot is reached (before the tick: it never fires early).
//   - Slot cur(L) is empty at every level above 0, and a node's slot starts at or before its
//     tick. Level 0's slot cur holds the nodes of tick current_ (the tick in progress).
//   - A non-empty level-0 slot's latest_ is at least every deadline in it (a removal does
//     not lower it) and within the slot's tick; an empty one's is 0.
// Hence the lowest non-empty level holds the earliest slot, and no node fires early.
// Not thread-safe: the time driver holds its shard's lock.
class TimerWheel {
 public:
  /// Levels of the hierarchy, and slots per level (64: one bit each in a level's bitmap).
  static constexpr unsigned kLevels = 6;
  static constexpr unsigned kSlots = 64;

  /// `tick_length` > 0: the units of time in one tick (1: every deadline is a tick).
  explicit TimerWheel(std::uint64_t tick_length = 1) noexcept : tick_length_(tick_length) {}

  /// The last tick that has ended as far as the wheel knows: every node whose tick is at most
  /// elapsed() has been handed out by poll (or was never linked). Starts at 0.
  std::uint64_t elapsed() const noexcept { return current_ - 1; }

  /// Links `node` (`node->when` set, `node` not linked) and returns true; O(1). Returns false
  /// and leaves `node` unlinked when its tick is at most elapsed(): it is already due, and
  /// the caller completes it at once. `node` must stay put until it is removed or handed out.
  bool insert(TimerNode* node) noexcept;

  /// Unlinks `node`, which must be linked in this wheel; O(1). It will not be handed out.
  void remove(TimerNode* node) noexcept;

  /// The earliest time at which poll may hand out a node (nullopt: empty): a level-0 slot's
  /// latest deadline, or the start of the first tick of a higher-level slot, whose nodes the
  /// poll then moves down.
  std::optional<std::uint64_t> next_expiration() const noexcept;

  /// The earliest time at which poll may hand out the linked `node`: on level 0, its slot's
  /// latest deadline (exactly then, if the slot does not change); above, its own deadline.
  std::uint64_t earliest_fire(const TimerNode& node) const noexcept {
    return node.level == 0 ? latest_[node.slot] : node.when;
  }

  /// Calls `on_expired(TimerNode*)`, in nondecreasing tick (ties unordered), for every node
  /// of a tick that has ended by `now`, and of the tick `now` is in if every deadline of that
  /// tick has passed (a tick fires as one); each node is unlinked first. Advances elapsed() to
  /// the last tick that ended by `now` (never back) and returns true. It jumps between
  /// occupied slots, never tick by tick. When `on_expired` returns false the poll stops
  /// there and returns false: the nodes left stay due, for the next poll (the wheel may change
  /// in between). `on_expired` must not call into this wheel.
  template <class F>
  bool poll(std::uint64_t now, F&& on_expired);

  /// True when no node is linked.
  bool empty() const noexcept;

 private:
  // The next occupied slot (the lowest non-empty level's first occupied slot from cur).
  struct Expiration {
    unsigned level;
    unsigned slot;
    std::uint64_t tick;  // the slot's first tick
  };
  std::optional<Expiration> next_slot() const noexcept;

  // Moves every node of the higher-level slot of `exp`, whose first tick current_ has reached,
  // to its place relative to current_ (a lower level, or the top level's new last slot).
  void cascade(const Expiration& exp) noexcept;

  void link(TimerNode* node) noexcept;  // node->tick >= current_
  void unlink(TimerNode* node) noexcept;

  const std::uint64_t tick_length_;
  std::uint64_t current_ = 1;
  std::array<std::uint64_t, kLevels> occupied_{};  // bit s of level L: slot s is non-empty
  std::array<std::array<TimerNode*, kSlots>, kLevels> heads_{};
  std::array<std::uint64_t, kSlots> latest_{};  // level 0: see the invariants
};

template <class F>
bool TimerWheel::poll(std::uint64_t now, F&& on_expired) {
  const std::uint64_t ended = now / tick_length_;  // the last tick that has ended by `now`
  // Slots in order of their first tick. A higher-level slot is opened as soon as its first
  // tick is in progress, so that the nodes of that tick reach level 0 in time to fire with
  // their latest deadline. A level-0 slot fires once its latest deadline has passed: always
  // for a tick that has ended, never for a tick after the one in progress.
  for (auto exp = next_slot(); exp; exp = next_slot()) {
    if (exp->level > 0) {
      if (exp->tick > ended + 1) break;
      current_ = exp->tick;
      cascade(*exp);
    } else if (latest_[exp->slot] <= now) {
      while (TimerNode* node = heads_[0][exp->slot]) {
        unlink(node);
        if (!on_expired(node)) return false;
      }
    } else {
      break;
    }
  }
  if (ended + 1 > current_) current_ = ended + 1;
  return true;
}

}  // namespace spool::detail
