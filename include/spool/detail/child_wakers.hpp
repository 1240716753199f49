// ChildWakers: one Waker per child of a combinator (when_all, when_any, JoinSet), so that a
// wake from child i marks only child i ready, without an allocation per child or per poll.
//
// The protocol (docs/combinators.md):
//  - One heap block per combinator holds a reference count, the parent's AtomicWaker, and
//    one node per child ({block, ready word, bit}) in chunks of 64 that never move. A child's
//    Waker is an intrusive vtable whose data pointer is its node.
//  - wake(child i): set bit i in its chunk's ready word (release), then wake the parent's
//    latest waker (AtomicWaker::wake).
//  - The parent's poll: register its waker first, then take each ready word (exchange 0,
//    acquire) and poll only the children whose bit was set. A wake after the exchange
//    finds the waker registered before it, so none is lost.
//  - Clones count references on the block (the owner holds one, and so does each Waker it
//    keeps per child): a clone that outlives the combinator (a leaf that gave it to a timer
//    or another thread) keeps the block alive, and a wake through it then sets a bit nobody
//    reads (the owner took the parent's waker out when it went). The last reference frees
//    the block.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "spool/core/atomic_waker.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::detail {

/// One Waker per child of a combinator, and the set of children woken since the last poll.
/// Owned by one combinator: every member is called by the thread polling it (one at a time);
/// the Wakers it hands out may be cloned, woken and dropped on any thread.
class ChildWakers {
 public:
  /// Allocates the shared block (no child yet).
  ChildWakers() : block_(new Block) {}
  /// Drops the owner's Wakers, the parent's waker and the owner's reference; clones still
  /// alive keep the block (their wakes then set bits that nobody reads).
  ~ChildWakers() {
    if (block_ == nullptr) return;
    wakers_.clear();
    block_->parent.take();  // nullopt if a wake holds it: that wake drops it
    release(block_);
  }
  /// Takes `other`'s block (which then only may be destroyed). The block is on the heap, so
  /// the Wakers handed out stay valid.
  ChildWakers(ChildWakers&& other) noexcept
      : block_(std::exchange(other.block_, nullptr)), wakers_(std::move(other.wakers_)) {}
  ChildWakers& operator=(ChildWakers&&) = delete;
  ChildWakers(const ChildWakers&) = delete;
  ChildWakers& operator=(const ChildWakers&) = delete;

  /// The number of children with a Waker.
  std::size_t size() const noexcept { return wakers_.size(); }

  /// Gives children size() .. n-1 their node and Waker, each woken (so that the next poll
  /// polls it once, and a poll waiting for it runs again). Allocates a chunk per 64
  /// children beyond the first 64.
  void grow(std::size_t n) {
    if (wakers_.capacity() < n) wakers_.reserve(std::max(n, 2 * wakers_.capacity()));
    while (wakers_.size() < n) {
      const std::size_t i = wakers_.size();
      if (i / kChunkBits == block_->more.size() + 1)
        block_->more.push_back(std::make_unique<Chunk>());
      Chunk& chunk = block_->chunk(i / kChunkBits);
      Node& node = chunk.nodes[i % kChunkBits];
      node = Node{block_, &chunk.ready, std::uint64_t{1} << (i % kChunkBits)};
      // Relaxed: a new reference made from the owner's, as raw_clone() does.
      block_->refs.fetch_add(1, std::memory_order_relaxed);
      wakers_.push_back(Waker::from_raw(RawWaker{&node, &kVTable}));  // cannot throw: reserved
      wake(i);
    }
  }

  /// Child i's Waker (for `Context(waker(i), parent_cx)`); valid while this object lives.
  const Waker& waker(std::size_t i) const noexcept { return wakers_[i]; }

  /// Marks child i ready and wakes the parent, as a wake from child i does.
  void wake(std::size_t i) { wakers_[i].wake_by_ref(); }

  /// Stores the parent's waker, to be woken by the children's wakes. Call it at the start of
  /// every poll, before for_each_ready.
  void register_parent(const Waker& parent) { block_->parent.register_waker(parent); }

  /// Takes the set of children woken since the last call and calls `fn(i)` for each, in
  /// index order. `fn` returns true to stop; the children not visited yet (and, if `fn`
  /// throws, those too) stay marked ready for the next call.
  template <class Fn>
  void for_each_ready(Fn&& fn) {
    const std::size_t chunks = (wakers_.size() + kChunkBits - 1) / kChunkBits;
    for (std::size_t c = 0; c < chunks; ++c) {
      Chunk& chunk = block_->chunk(c);
      // Acquire: pairs with the release fetch_or of the wakes taken here, so the poll of a
      // woken child sees what was written before its wake.
      std::uint64_t bits = chunk.ready.exchange(0, std::memory_order_acquire);
      while (bits != 0) {
        const std::size_t i = c * kChunkBits + static_cast<std::size_t>(std::countr_zero(bits));
        bits &= bits - 1;
        bool stop = false;
        try {
          stop = fn(i);
        } catch (...) {
          restore(chunk, bits);
          throw;
        }
        if (stop) {
          restore(chunk, bits);
          return;
        }
      }
    }
  }

 private:
  static constexpr std::size_t kChunkBits = 64;
  struct Block;
  // A child's wake target, the data pointer of its Waker. Written by grow() before the
  // child's Waker exists, never changed afterwards: readers on other threads got the Waker
  // through something that synchronised with that (the poll that handed it out).
  struct Node {
    Block* block = nullptr;
    Atomic<std::uint64_t>* ready = nullptr;
    std::uint64_t bit = 0;
  };
  struct Chunk {
    // Ready bits of the chunk's children. Set by raw_wake_by_ref (fetch_or, release) on any
    // thread; taken by for_each_ready (exchange 0, acquire: pairs with those fetch_ors) and put
    // back by restore (fetch_or, release: pairs with the next exchange), both on the owner's
    // polling thread.
    Atomic<std::uint64_t> ready{0};
    std::array<Node, kChunkBits> nodes{};
  };
  struct Block {
    // References: the owner's, one per Waker it keeps, one per clone alive anywhere. Added
    // with relaxed fetch_add (made from an existing reference); dropped with acq_rel
    // fetch_sub, so the last dropper, which deletes the block, sees every holder's writes.
    Atomic<std::size_t> refs{1};
    AtomicWaker parent;  // the parent's latest waker (register_parent)
    Chunk first;         // children 0..63
    // Children 64 and up; appended by grow() on the owner's thread only, never moved (each
    // chunk is its own allocation), freed with the block.
    std::vector<std::unique_ptr<Chunk>> more;
    Chunk& chunk(std::size_t c) noexcept { return c == 0 ? first : *more[c - 1]; }
  };

  static const Node& node_of(const void* data) noexcept { return *static_cast<const Node*>(data); }
  static void release(Block* block) noexcept {
    if (block->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete block;
  }
  static void restore(Chunk& chunk, std::uint64_t bits) noexcept {
    if (bits != 0) chunk.ready.fetch_or(bits, std::memory_order_release);
  }

  // The vtable of the children's Wakers.
  static RawWaker raw_clone(const void* data) noexcept {
    // Relaxed: a new reference made from an existing one.
    node_of(data).block->refs.fetch_add(1, std::memory_order_relaxed);
    return RawWaker{data, &kVTable};
  }
  static void raw_wake_by_ref(const void* data) {
    const Node& node = node_of(data);
    // Release: pairs with for_each_ready's acquire exchange.
    node.ready->fetch_or(node.bit, std::memory_order_release);
    node.block->parent.wake();
  }
  static void raw_wake(const void* data) {
    raw_wake_by_ref(data);
    raw_drop(data);
  }
  static void raw_drop(const void* data) noexcept { release(node_of(data).block); }
  SPOOL_API static constexpr WakerVTable kVTable{&raw_clone, &raw_wake, &raw_wake_by_ref,
                                                 &raw_drop};

  Block* block_;               // null only once moved from
  std::vector<Waker> wakers_;  // child i's Waker, each holding a reference on block_
};

}  // namespace spool::detail
