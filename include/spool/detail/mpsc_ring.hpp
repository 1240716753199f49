// MpscRing: the queue of a bounded mpsc channel — a ring of sequenced slots.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <utility>

#include "spool/config.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::detail {

/// A ring of slots, each with a sequence number (Vyukov's bounded queue, with one consumer).
/// Producers (any threads) push only while holding one of the channel's capacity permits,
/// so at most `capacity` slots are reserved and not yet consumed: the slot a producer
/// reserves is always free, and push never fails for want of room. One consumer at a time
/// pops. A push whose value constructor throws leaves a hole that pop skips (it still
/// counts as one consumed slot, so the caller returns its permit).
template <class T>
class MpscRing {
 public:
  /// A ring with room for `capacity` values (≥ 1; rounded up to a power of two).
  explicit MpscRing(std::size_t capacity)
      : mask_(std::bit_ceil(std::max<std::size_t>(capacity, 1)) - 1),
        slots_(std::make_unique<Slot[]>(mask_ + 1)) {
    for (std::size_t i = 0; i <= mask_; ++i) slots_[i].seq.store(i, std::memory_order_relaxed);
  }
  MpscRing(const MpscRing&) = delete;
  MpscRing& operator=(const MpscRing&) = delete;
  /// Destroys the values pushed and never popped (no producer may still be pushing).
  ~MpscRing() {
    while (drop_next()) {
    }
  }

  /// Producer, holding a capacity permit: stores `value` in the next slot. If T's
  /// constructor throws, the slot is published as a hole and the exception propagates.
  template <class U>
  void push(U&& value) {
    // Seq_cst: this read-modify-write is the sender's half of the receiver's park protocol
    // (MpscChan: a receiver that does not see it in reserved() is seen to be parked by this
    // producer's later seq_cst load).
    const std::uint64_t pos = tail_.fetch_add(1, std::memory_order_seq_cst);
    Slot& s = slots_[pos & mask_];
    // Acquire: pairs with pop's release store that freed this slot (seq = pos), so the
    // destruction of the slot's previous value happens before the construction here. The
    // permit means the consumer has freed it; the loop only waits for that store to be seen.
    while (s.seq.load(std::memory_order_acquire) != pos) {
    }
    try {
      ::new (static_cast<void*>(s.storage)) T(std::forward<U>(value));
      s.full = true;
    } catch (...) {
      s.full = false;
      s.seq.store(pos + 1, std::memory_order_release);
      throw;
    }
    // Release: publishes the value (and `full`) to pop's acquire load.
    s.seq.store(pos + 1, std::memory_order_release);
  }

  /// Consumer: true when a producer has reserved the next slot (it may still be writing it;
  /// pop_into takes it once it is published).
  bool reserved() const noexcept { return reserved_count() != 0; }
  /// Consumer: the slots reserved and not yet consumed (published or being written).
  std::size_t reserved_count() const noexcept {
    // Seq_cst: the receiver's half of the park protocol (see push).
    return static_cast<std::size_t>(tail_.load(std::memory_order_seq_cst) - head_);
  }

  /// Consumer: destroys the oldest published value in place (nothing moved, so nothing can
  /// throw there) and frees its slot; false when the next slot is not published yet.
  bool drop_next() noexcept {
    Slot& s = slots_[head_ & mask_];
    // Acquire: pairs with push's release store of seq = position + 1.
    if (s.seq.load(std::memory_order_acquire) != head_ + 1) return false;
    if (s.full) std::launder(reinterpret_cast<T*>(s.storage))->~T();
    free_head(s);
    return true;
  }

  /// Consumer: takes the oldest published slot, if any, and returns whether it did; the
  /// slot's value is emplaced into `out` (left empty for a hole). Returns false when the
  /// next slot is not published yet (empty ring, or a producer still writing it).
  bool pop_into(std::optional<T>& out) {
    Slot& s = slots_[head_ & mask_];
    // Acquire: pairs with push's release store of seq = position + 1.
    if (s.seq.load(std::memory_order_acquire) != head_ + 1) return false;
    if (s.full) {
      T* v = std::launder(reinterpret_cast<T*>(s.storage));
      out.emplace(std::move(*v));
      v->~T();
    }
    free_head(s);
    return true;
  }

 private:
  struct Slot;
  // Hands the head slot `s` (consumed) to the producer of the next lap.
  void free_head(Slot& s) noexcept {
    // Release: pairs with push's acquire load by the producer that reuses this slot one
    // lap later (seq = that producer's position).
    s.seq.store(head_ + mask_ + 1, std::memory_order_release);
    ++head_;
  }

  struct Slot {
    // The slot's turn: position p's producer may write it when seq == p, the consumer may
    // read it when seq == p + 1 (see push and pop for the pairings).
    Atomic<std::uint64_t> seq{0};
    bool full = false;  // a value is stored (false: a hole); written before seq is published
    alignas(T) unsigned char storage[sizeof(T)];
  };

  const std::size_t mask_;
  const std::unique_ptr<Slot[]> slots_;
  // The next position to reserve. Producers fetch_add it (seq_cst: see push); the consumer
  // loads it (seq_cst) in reserved(). The slots' seq words carry the data.
  alignas(64) Atomic<std::uint64_t> tail_{0};
  // The next position to pop; the consumer's alone.
  alignas(64) std::uint64_t head_ = 0;
};

}  // namespace spool::detail
