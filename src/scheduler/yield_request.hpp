// HighestFirst's yield protocol (docs/levels.md): a thread that queues a task asks a poller
// running lower-level work to yield, and a poller about to poll looks again for higher-level
// work. Header-only, on Atomic, for its Relacy model (tests/model/yield_request_model.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "spool/detail/atomic.hpp"

namespace spool::detail {

// One polling thread's (a worker's, a current-thread driver's) answer to "whom do I ask to
// yield" and the request itself.
struct YieldState {
  // The level of the task polled now (0 when idle). Stored seq_cst by the poller before each
  // poll, which then loads the level counts seq_cst; loaded seq_cst by a queuer after its
  // seq_cst count: the Dekker pairing by which the poller sees the new task or the queuer
  // sees the poller's level.
  Atomic<std::uint16_t> running_level{0};
  // Set (release) by a queuer; read relaxed by the budget check of the task polled here
  // (context/budget.cpp) and by queuers passing over a poller asked already (a hint);
  // cleared by the poller before each pick (clear_before_pick).
  Atomic<bool> requested{false};

  // Before the poller picks: the pick answers every request made so far. The exchange
  // (acq_rel) pairs with the request's release store, so the pick sees the task behind it; a
  // request made after it stays set. (A load-then-store could erase one made between.)
  void clear_before_pick() noexcept {
    if (requested.load(std::memory_order_relaxed)) {
      requested.exchange(false, std::memory_order_acq_rel);
    }
  }
};

// Each level's tasks in run queues (the LIFO slots aside), each count on a line of its own.
// Added to seq_cst before a push and after a take: a zero read after a push is never stale;
// a stale non-zero costs a look into empty queues.
class LevelCounts {
 public:
  explicit LevelCounts(std::uint16_t num_levels) : counts_(new Count[num_levels]) {}

  void add(std::uint16_t level, std::int64_t delta) noexcept {
    counts_[level].n.fetch_add(delta, std::memory_order_seq_cst);
  }
  bool has_work(std::uint16_t level) const noexcept {
    return counts_[level].n.load(std::memory_order_seq_cst) > 0;
  }
  bool higher_than(std::uint16_t level) const noexcept {
    for (std::uint16_t l = 0; l < level; ++l) {
      if (has_work(l)) return true;
    }
    return false;
  }

 private:
  struct alignas(64) Count {
    Atomic<std::int64_t> n{0};
  };
  std::unique_ptr<Count[]> counts_;
};

// The poller's side, before it polls a task of `level`: publishes the level, then looks
// again. True: a higher level's task was queued since the pick (and its queuer may have seen
// the old level and asked nobody): the caller puts its task back and picks again.
inline bool higher_level_since_pick(YieldState& poller, const LevelCounts& counts,
                                    std::uint16_t level) noexcept {
  poller.running_level.store(level, std::memory_order_seq_cst);
  return counts.higher_than(level);
}

// The queuer's side, after it counted a task of `level` and woke no idle thread: asks the
// poller running the lowest level below `level`, among those not asked already (several
// tasks queued at once ask several pollers), to yield: its task matters least. `poller(i)`
// is the YieldState of poller i < n.
template <class PollerAt>
void ask_to_yield(std::size_t n, PollerAt&& poller, std::uint16_t level) noexcept {
  YieldState* lowest = nullptr;
  std::uint16_t lowest_level = level;
  for (std::size_t i = 0; i < n; ++i) {
    YieldState& y = poller(i);
    if (y.requested.load(std::memory_order_relaxed)) continue;
    const std::uint16_t l = y.running_level.load(std::memory_order_seq_cst);
    if (l > lowest_level) {
      lowest_level = l;
      lowest = &y;
    }
  }
  if (lowest != nullptr) lowest->requested.store(true, std::memory_order_release);
}

}  // namespace spool::detail
