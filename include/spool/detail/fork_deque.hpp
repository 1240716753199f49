// A worker's fork deque: the children of spool::join that wait for their parent to reach
// them, which other workers may steal meanwhile (include/spool/fork.hpp, docs/fork.md).
// Below the scheduler, which owns one per worker (src/scheduler/multi_thread/), so that a
// join pushes and pops inline.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "spool/config.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/fork_item.hpp"

namespace spool::detail {

// A Chase-Lev work-stealing deque over a fixed ring (Lê, Pop, Cohen, Zappa Nardelli, "Correct
// and efficient work-stealing for weak memory models", PPoPP 2013). The owner pushes and
// pops at the bottom (the newest item first: a join takes back the child it offered last);
// thieves steal at the top (the oldest: the biggest subtrees of a fork tree).
// Capacity is a template parameter so that models and stress tests can shrink it.
//
// The paper's pop has a seq_cst fence between its store of bottom_ and its load of top_,
// and steal one between its load of top_ and its load of bottom_. Built `asymmetric`, the pair is
// an asymmetric one (spool/detail/atomic.hpp): pop, which runs for every child of every join, costs
// a compiler barrier instead of a locked instruction, and steal, rare, a membarrier system call (as
// in Ladan-Mozes, Lee and Vyukov, "Location-based memory fences", SPAA 2011). Else seq_cst
// accesses stand for the fences (ThreadSanitizer models no fence).
//
// Protocol:
//  - bottom_: written only by the owner. push publishes a slot with a release store, which
//    steal's loads (acquire at least) pair with. pop's store of bottom - 1, then its load
//    of top_, against steal's load of top_ then of bottom_, with a fence between each pair
//    (seq_cst accesses, or the asymmetric pair): one of the two sees the other, so the owner
//    and a thief never both take one item without racing for it on top_.
//  - top_: advanced only by compare-exchange (seq_cst): by a thief for the item it read, by
//    the owner for the last item. The winner owns the item; the loser sees nothing.
//  - slots: relaxed atomics; the two indices order them. A slot is rewritten only once top_
//    passed it, so a thief that read a stale slot loses its compare-exchange.
template <std::size_t Capacity = 256>
class WorkStealingDeque {
  static_assert((Capacity & (Capacity - 1)) == 0 && Capacity >= 2, "capacity: power of two, >= 2");
  static constexpr std::int64_t kMask = Capacity - 1;

 public:
  // `asymmetric`: pop and steal fence with asymmetric fences; only once
  // enable_asymmetric_fences() returned true.
  explicit WorkStealingDeque(bool asymmetric = false) noexcept : asymmetric_(asymmetric) {}

  // Owner only. Appends `item`; false when the deque is full (the item is not queued).
  // `was_empty`: no item was queued before this one (as far as the owner could see).
  bool push(ForkItem* item, bool& was_empty) noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);  // the owner's own
    // Acquire: pairs with the thieves' compare-exchange, so that a slot a thief read is
    // not rewritten under it (the full check below uses this top).
    const std::int64_t t = top_.load(std::memory_order_acquire);
    if (b - t >= static_cast<std::int64_t>(Capacity)) return false;
    slots_[static_cast<std::size_t>(b & kMask)].store(item, std::memory_order_relaxed);
    // Release: publishes the slot to the thieves' load of bottom_.
    bottom_.store(b + 1, std::memory_order_release);
    was_empty = b == t;
    return true;
  }

  // Owner only. Takes the newest item back; null when none is left (thieves took them).
  ForkItem* pop() noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    // The store, a fence, then the load of top_: see the protocol above.
    std::int64_t t;
    if (asymmetric_) {
      bottom_.store(b, std::memory_order_relaxed);
      asymmetric_fence_light();  // pairs with steal's heavy one
      t = top_.load(std::memory_order_relaxed);
    } else {
      bottom_.store(b, std::memory_order_seq_cst);
      t = top_.load(std::memory_order_seq_cst);
    }
    if (t > b) {  // empty
      bottom_.store(b + 1, std::memory_order_relaxed);
      return nullptr;
    }
    ForkItem* item = slots_[static_cast<std::size_t>(b & kMask)].load(std::memory_order_relaxed);
    if (t == b) {
      // The last item: a thief may be taking it; whoever advances top_ has it.
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        item = nullptr;
      }
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return item;
  }

  // Any thread. Takes the oldest item; null when there is none or another thread took it
  // first.
  ForkItem* steal() noexcept {
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    if (t >= b) return nullptr;
    if (asymmetric_) {
      // The load of bottom_ above only spares an empty deque the system call; this one,
      // after the fence, decides. Acquire: pairs with push's release store. Without the
      // fence (refused by the system), taking nothing is safe: the owner pops it.
      if (!asymmetric_fence_heavy()) return nullptr;  // pairs with pop's light one
      b = bottom_.load(std::memory_order_acquire);
      if (t >= b) return nullptr;
    }
    ForkItem* item = slots_[static_cast<std::size_t>(t & kMask)].load(std::memory_order_relaxed);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      return nullptr;
    }
    return item;
  }

  // Whether pop and steal fence asymmetrically (as built).
  bool asymmetric() const noexcept { return asymmetric_; }

  // Any thread; a hint (items may come and go meanwhile).
  bool is_empty() const noexcept {
    // Acquire on both: pairs with push's release and the compare-exchanges; a stale answer
    // only costs a look (a parking worker's re-check) or a missed chance to steal.
    return top_.load(std::memory_order_acquire) >= bottom_.load(std::memory_order_acquire);
  }

 private:
  alignas(64) Atomic<std::int64_t> top_{0};
  alignas(64) Atomic<std::int64_t> bottom_{0};
  const bool asymmetric_;  // read with bottom_, by the owner and the thieves alike
  std::array<Atomic<ForkItem*>, Capacity> slots_{};
};

// The deque of a multi-thread worker (its WorkerShared): 256 children waiting at once is
// deeper than any fork tree needs; a join whose child does not fit runs it inline.
class ForkDeque : public WorkStealingDeque<256> {
 public:
  // `asymmetric`: see WorkStealingDeque. `runtime`: where its stolen children run as tasks.
  // `inherit_channel`: a stolen child goes to its parent's channel (a runtime with levels).
  explicit ForkDeque(bool asymmetric = false, RuntimeShared* runtime = nullptr,
                     bool inherit_channel = false) noexcept
      : WorkStealingDeque(asymmetric), runtime_(runtime), inherit_channel_(inherit_channel) {}

  RuntimeShared* runtime() const noexcept { return runtime_; }
  bool inherit_channel() const noexcept { return inherit_channel_; }

  // How many times the thread holding the deque handed its items over as tasks
  // (block_in_place's spill). Relaxed: a thread compares it with the count fork_site gave
  // it, and its own spill, which changed it, is sequenced before that load.
  std::uint64_t spills() const noexcept { return spills_.load(std::memory_order_relaxed); }
  // Called by the thread holding the deque, once it popped every item to spill it.
  void count_spill() noexcept {
    // Relaxed: only the thread holding the core writes it (the hand-over of the core orders
    // the next holder's writes after this one).
    spills_.store(spills_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

 private:
  Atomic<std::uint64_t> spills_{0};
  RuntimeShared* const runtime_;
  const bool inherit_channel_;
};

// The deque of the worker core this thread holds: set by the multi-thread worker loop for
// as long as it holds a core; null on other threads, and once block_in_place handed the
// core over. Only its own thread reads or writes it. (constinit: no TLS wrapper call.)
// SPOOL_API: one variable for libspool.so, which sets it, and the inline joins in users'
// code, which read it; hidden, each would have its own and users' joins would never see it.
SPOOL_API inline constinit thread_local ForkDeque* this_thread_forks = nullptr;

// A push into an empty deque: wakes a parked worker to steal (src/scheduler/multi_thread/).
SPOOL_API void notify_fork_thieves() noexcept;

// Offers `item` for stealing on `deque`, which fork_site gave this thread; false when full.
inline bool fork_push(ForkDeque& deque, ForkItem& item) noexcept {
  bool was_empty;
  if (!deque.push(&item, was_empty)) return false;
  if (was_empty) notify_fork_thieves();
  return true;
}

// Takes back the item this thread pushed last on `site.deque`; null when a thief took it,
// or when block_in_place handed the deque's items over as tasks since fork_site (the thread
// may hold the deque no more: only block_in_place takes a core away).
inline ForkItem* fork_pop(const ForkSite& site) noexcept {
  if (site.deque->spills() != site.spills) return nullptr;
  return site.deque->pop();
}

}  // namespace spool::detail
