// A FIFO of pointers kept in linked blocks of slots: the inject queue's storage. Taking a batch
// copies slots, eight to a cache line, and never reads the items. An intrusive list makes the
// taker load each item's link instead: one cache miss per task another core just spawned, all
// under the queue's lock (a sixth of W1's time went there).
// Past `max_blocks` blocks, or when no block can be allocated, items queue through their own link
// (`Next`) instead, so that pushing never fails; later pushes link too until the queue has
// drained, so FIFO order holds across the two.
// Not synchronised: the inject queue's lock guards it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

#include "scheduler/intrusive_fifo.hpp"

namespace spool::detail {

template <class T, T* T::*Next>
class BlockFifo {
 public:
  static constexpr std::size_t kSlotsPerBlock = 127;  // a block is 1 KiB

  explicit BlockFifo(std::size_t max_blocks) noexcept : max_blocks_(max_blocks) {}
  BlockFifo(const BlockFifo&) = delete;
  BlockFifo& operator=(const BlockFifo&) = delete;
  ~BlockFifo() {
    free_chain(head_);
    free_chain(spare_);
  }

  void push_back(T* item) noexcept {
    // Once one item took the links, later ones follow it there until they have drained.
    if (in_blocks_ == len_ && (tail_end_ < kSlotsPerBlock || add_block())) {
      tail_->slots[tail_end_++] = item;
      ++in_blocks_;
    } else {
      linked_.push_back(item);
    }
    ++len_;
  }

  // Moves up to `max` items, oldest first, into `out`; returns how many.
  std::size_t pop_front(T** out, std::size_t max) noexcept {
    std::size_t n = 0;
    while (n < max && in_blocks_ > 0) {
      const std::size_t end = head_ == tail_ ? tail_end_ : kSlotsPerBlock;
      const std::size_t k = std::min(end - head_begin_, max - n);
      std::copy_n(head_->slots + head_begin_, k, out + n);
      head_begin_ += k;
      n += k;
      in_blocks_ -= k;
      if (head_begin_ == end) retire_head();
    }
    // len_ - n are linked: testing that, not the list, keeps an emptied queue's pop on the
    // first cache line.
    for (; n < max && n < len_; ++n) out[n] = linked_.pop_front();
    len_ -= n;
    return n;
  }

  std::size_t len() const noexcept { return len_; }
  // Blocks in the chain (the spares aside): at most max_blocks.
  std::size_t blocks() const noexcept { return blocks_; }

 private:
  // The indices live in the FIFO, next to its lock, not in the block: a pusher and a taker of
  // one block then share its slots' lines only.
  struct Block {
    Block* next = nullptr;
    T* slots[kSlotsPerBlock];
  };
  // Emptied blocks kept for reuse, so that a steady stream allocates none.
  static constexpr std::size_t kMaxSpares = 2;

  bool add_block() noexcept {
    if (blocks_ == max_blocks_) return false;
    Block* b = spare_;
    if (b) {
      spare_ = b->next;
      --spares_;
      b->next = nullptr;
    } else {
      // malloc, not new: a failure is a null to fall back on, and a program that replaces
      // operator new (but not its nothrow form) cannot mismatch the block's delete.
      void* raw = std::malloc(sizeof(Block));
      if (!raw) return false;
      b = ::new (raw) Block;
    }
    (tail_ ? tail_->next : head_) = b;
    tail_ = b;
    tail_end_ = 0;
    ++blocks_;
    return true;
  }

  // The head block is empty: the last one is kept for the next push, any other unlinked.
  void retire_head() noexcept {
    Block* b = head_;
    head_begin_ = 0;
    if (b == tail_) {
      tail_end_ = 0;
      return;
    }
    head_ = b->next;
    --blocks_;
    if (spares_ < kMaxSpares) {
      b->next = spare_;
      spare_ = b;
      ++spares_;
    } else {
      std::free(b);
    }
  }

  static void free_chain(Block* b) noexcept {
    while (b) std::free(std::exchange(b, b->next));
  }

  // First what every push and pop touches (48 bytes: with the inject queue's lock and length,
  // one cache line), then what only a new block or the links do.
  Block* head_ = nullptr;  // the oldest items; non-empty unless it is also tail_
  Block* tail_ = nullptr;
  std::size_t head_begin_ = 0;  // the oldest item's slot in head_
  // One past the newest item's slot in tail_; full (no tail_ yet) makes the first push add one.
  std::size_t tail_end_ = kSlotsPerBlock;
  std::size_t in_blocks_ = 0;
  std::size_t len_ = 0;  // in_blocks_ and the linked ones
  IntrusiveFifo<T, Next> linked_;
  Block* spare_ = nullptr;
  std::size_t blocks_ = 0;
  std::size_t spares_ = 0;
  const std::size_t max_blocks_;
};

}  // namespace spool::detail
