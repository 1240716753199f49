// A worker's local run queue: a fixed ring that its owner pushes and pops without locks,
// and that other workers steal half of.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "spool/detail/atomic.hpp"

namespace spool::detail {

class TaskHeader;
class InjectQueue;

// Capacity is a template parameter so that stress tests and models can shrink it (overflow
// and steal races then happen constantly). The scheduler uses LocalQueue<> (TaskHeader*
// overflowing into its InjectQueue); the model tests queue other items into other sinks.
//  - Item: a pointer-like value; Item{} means "none" and is never pushed.
//  - Overflow: the sink of push_back_or_overflow, with `bool push(Item)` and
//    `bool push_batch(const Item*, std::size_t)` (false: closed, the caller keeps them).
//
// Protocol (after tokio's queue):
//  - tail_: written only by the owner (push) and by the owner's steal_into (publishing the
//    stolen slots), release; stealers read it with acquire (steal_into2) to see the slots
//    written before it. The owner's own reads are relaxed (it wrote the value); len() acquires.
//  - head_: two 32-bit indices packed in one word, (steal << 32) | real. `real` is the next
//    slot to pop; `steal` trails it while a stealer copies [steal, real) out. steal == real
//    when no steal is in progress. Changed by CAS only (owner pops and overflows, stealers
//    claim and release), acq_rel: the release of a stealer's final CAS orders its slot reads
//    before the owner's acquire load of head_ in push, so a claimed slot is read before the
//    owner can reuse it; every other read of head_ is acquire for the same pairing.
//  - slots: relaxed atomics; the head/tail protocol orders them.
// Indices wrap at 2^32; the ring index is `i & (Capacity - 1)`.
template <std::size_t Capacity = 256, class Item = TaskHeader*, class Overflow = InjectQueue>
class LocalQueue {
  static_assert((Capacity & (Capacity - 1)) == 0 && Capacity >= 4, "capacity: power of two, >= 4");
  static constexpr std::uint32_t kMask = Capacity - 1;

 public:
  static constexpr std::size_t kCapacity = Capacity;  // slots in the ring

  // Owner only. Appends `task`; when the ring is full, moves half of it plus `task` to
  // `inject` (which must accept them, or they are dropped via drop_ref on close).
  template <class DropRef>
  void push_back_or_overflow(Item task, Overflow& inject, DropRef drop_ref) noexcept {
    for (;;) {
      std::uint32_t tail = tail_.load(std::memory_order_relaxed);
      std::uint64_t head = head_.load(std::memory_order_acquire);
      std::uint32_t steal = unpack_steal(head);
      std::uint32_t real = unpack_real(head);
      if (tail - steal < Capacity) {
        slots_[tail & kMask].store(task, std::memory_order_relaxed);
        tail_.store(tail + 1, std::memory_order_release);
        return;
      }
      if (steal != real) {
        // A stealer is freeing room right now; do not wait for it.
        if (!inject.push(task)) drop_ref(task);
        return;
      }
      if (push_overflow(task, real, tail, inject, drop_ref)) return;
      // Lost a race with a stealer: there is room now, retry.
    }
  }

  // Owner only. Appends items[0..n) in order: those that fit are published by one release
  // store of tail_ (as push_back_or_overflow's, the acquire of head_ pairing with a
  // stealer's final CAS), the rest go through push_back_or_overflow.
  template <class DropRef>
  void push_back_many(const Item* items, std::size_t n, Overflow& inject,
                      DropRef drop_ref) noexcept {
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint32_t steal = unpack_steal(head_.load(std::memory_order_acquire));
    const std::size_t fit = std::min<std::size_t>(n, Capacity - (tail - steal));
    for (std::size_t i = 0; i < fit; ++i) {
      slots_[(tail + i) & kMask].store(items[i], std::memory_order_relaxed);
    }
    if (fit > 0) tail_.store(tail + static_cast<std::uint32_t>(fit), std::memory_order_release);
    for (std::size_t i = fit; i < n; ++i) push_back_or_overflow(items[i], inject, drop_ref);
  }

  // Owner only. The oldest item, or Item{} when empty.
  Item pop() noexcept {
    std::uint64_t head = head_.load(std::memory_order_acquire);
    for (;;) {
      std::uint32_t steal = unpack_steal(head);
      std::uint32_t real = unpack_real(head);
      if (real == tail_.load(std::memory_order_relaxed)) return Item{};
      std::uint32_t next_real = real + 1;
      std::uint64_t next = steal == real ? pack(next_real, next_real) : pack(steal, next_real);
      if (head_.compare_exchange_weak(head, next, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return slots_[real & kMask].load(std::memory_order_relaxed);
      }
    }
  }

  // Called by the owner of `dst`: moves about half of this queue into `dst` and returns
  // one of the moved tasks (Item{} when nothing could be stolen).
  Item steal_into(LocalQueue& dst) noexcept {
    std::uint32_t dst_tail = dst.tail_.load(std::memory_order_relaxed);
    std::uint32_t dst_steal = unpack_steal(dst.head_.load(std::memory_order_acquire));
    if (dst_tail - dst_steal > Capacity / 2) return Item{};  // dst has no room for half
    std::uint32_t n = steal_into2(dst, dst_tail);
    if (n == 0) return Item{};
    --n;  // the last one is returned, not published
    Item ret = dst.slots_[(dst_tail + n) & kMask].load(std::memory_order_relaxed);
    if (n > 0) dst.tail_.store(dst_tail + n, std::memory_order_release);
    return ret;
  }

  // Approximate number of queued tasks (any thread; for metrics and idle checks).
  std::size_t len() const noexcept {
    std::uint32_t head = unpack_real(head_.load(std::memory_order_acquire));
    std::uint32_t tail = tail_.load(std::memory_order_acquire);
    return tail - head;
  }
  bool is_empty() const noexcept { return len() == 0; }

 private:
  static std::uint32_t unpack_steal(std::uint64_t v) noexcept {
    return static_cast<std::uint32_t>(v >> 32);
  }
  static std::uint32_t unpack_real(std::uint64_t v) noexcept {
    return static_cast<std::uint32_t>(v);
  }
  static std::uint64_t pack(std::uint32_t steal, std::uint32_t real) noexcept {
    return (static_cast<std::uint64_t>(steal) << 32) | real;
  }

  template <class DropRef>
  bool push_overflow(Item task, std::uint32_t head, std::uint32_t tail, Overflow& inject,
                     DropRef drop_ref) noexcept {
    constexpr std::uint32_t kHalf = Capacity / 2;
    std::uint64_t prev = pack(head, head);
    // Claim the oldest half for ourselves; fails if a stealer got there first.
    if (!head_.compare_exchange_strong(prev, pack(head + kHalf, head + kHalf),
                                       std::memory_order_acq_rel, std::memory_order_acquire)) {
      return false;
    }
    (void)tail;
    std::array<Item, kHalf + 1> batch;
    for (std::uint32_t i = 0; i < kHalf; ++i)
      batch[i] = slots_[(head + i) & kMask].load(std::memory_order_relaxed);
    batch[kHalf] = task;
    if (!inject.push_batch(batch.data(), batch.size())) {
      for (Item t : batch) drop_ref(t);
    }
    return true;
  }

  std::uint32_t steal_into2(LocalQueue& dst, std::uint32_t dst_tail) noexcept {
    std::uint64_t prev = head_.load(std::memory_order_acquire);
    std::uint64_t next;
    std::uint32_t n;
    for (;;) {
      std::uint32_t steal = unpack_steal(prev);
      std::uint32_t real = unpack_real(prev);
      if (steal != real) return 0;  // another stealer is at work
      std::uint32_t tail = tail_.load(std::memory_order_acquire);
      n = tail - real;
      n -= n / 2;
      if (n == 0) return 0;
      next = pack(steal, real + n);
      if (head_.compare_exchange_weak(prev, next, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
        break;
    }
    std::uint32_t first = unpack_steal(next);
    for (std::uint32_t i = 0; i < n; ++i) {
      Item t = slots_[(first + i) & kMask].load(std::memory_order_relaxed);
      dst.slots_[(dst_tail + i) & kMask].store(t, std::memory_order_relaxed);
    }
    // Release the claim: steal catches up with real (which the owner may have advanced).
    prev = next;
    for (;;) {
      std::uint32_t real = unpack_real(prev);
      if (head_.compare_exchange_weak(prev, pack(real, real), std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return n;
      }
    }
  }

  // Protocols: see the class comment.
  alignas(64) Atomic<std::uint64_t> head_{0};
  alignas(64) Atomic<std::uint32_t> tail_{0};
  std::array<Atomic<Item>, Capacity> slots_{};
};

}  // namespace spool::detail
