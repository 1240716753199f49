// spool::DelayQueue<T>: values that come out, as a Stream, once their deadline passes; each
// can be reset or removed before then by the key its insert gave (tokio-util's DelayQueue).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/time/clock.hpp"
#include "spool/time/sleep.hpp"

namespace spool {

/// Values with deadlines. insert gives a Key; reset moves a value's deadline, remove takes it
/// out; poll_next (it is a spool::Stream) gives each value once its deadline has passed, the
/// earliest first (equal deadlines in the order they were set). One Sleep on the runtime's
/// timer wheel waits for the earliest deadline, moved as that changes: O(log n) per insert,
/// reset, remove and expiry, and no allocation per value once its storage has grown. Times
/// are on the current runtime's clock (its paused test clock too). Not thread-safe: one
/// task owns it. Must not move once polled (its Sleep is armed in place; a move then throws
/// std::logic_error).
template <class T>
class DelayQueue {
 public:
  /// Names one inserted value until it expires or is removed (then it is stale).
  struct Key {
    std::uint32_t slot = 0;        ///< where the value is stored
    std::uint32_t generation = 0;  ///< which use of that slot (never 0: Key{} names none)
    friend bool operator==(const Key&, const Key&) = default;
  };
  /// A value whose deadline passed, with its key (stale now) and that deadline.
  struct Expired {
    T value;           ///< the value inserted
    Key key;           ///< the key insert gave
    Instant deadline;  ///< when it was due
  };

  DelayQueue() = default;

  /// Inserts `value`, due at `deadline`. Strong guarantee: a throw (an allocation, T's move,
  /// or std::length_error past 2^32 - 1 slots) leaves the queue as it was.
  Key insert_at(T value, Instant deadline) {
    const bool fresh = free_.empty();
    if (fresh && entries_.size() >= kMaxSlots) {
      throw std::length_error(
          "spool::DelayQueue::insert: 2^32 - 1 values at once is its limit (keys hold 32-bit "
          "slots); use another DelayQueue");
    }
    // Storage first, so that nothing after a change throws (take's free_.push_back neither).
    reserve_room(heap_, heap_.size() + 1);
    reserve_room(free_, entries_.size() + 1);
    const auto slot = static_cast<std::uint32_t>(fresh ? entries_.size() : free_.back());
    if (fresh) entries_.emplace_back();
    try {
      entries_[slot].value.emplace(std::move(value));
    } catch (...) {
      if (fresh) entries_.pop_back();
      throw;
    }
    if (!fresh) free_.pop_back();
    Entry& e = entries_[slot];
    e.heap_index = heap_.size();
    heap_.push_back(slot);
    set_deadline(slot, deadline);
    return Key{slot, e.generation};
  }
  /// Inserts `value`, due `timeout` from now.
  Key insert(T value, std::chrono::nanoseconds timeout) {
    return insert_at(std::move(value), time::now() + timeout);
  }
  /// Moves the deadline of the value of `key` to `deadline`. Throws std::invalid_argument
  /// for a stale key.
  void reset_at(const Key& key, Instant deadline) { set_deadline(checked(key, "reset"), deadline); }
  /// Moves the deadline of the value of `key` to `timeout` from now.
  void reset(const Key& key, std::chrono::nanoseconds timeout) {
    reset_at(key, time::now() + timeout);
  }
  /// Takes out the value of `key` before it expires. Throws std::invalid_argument for a stale
  /// key; a throw of T's move leaves the value in.
  T remove(const Key& key) { return take(checked(key, "remove")); }
  /// Whether `key` names a value still in the queue.
  bool contains(const Key& key) const noexcept {
    return key.slot < entries_.size() && entries_[key.slot].value &&
           entries_[key.slot].generation == key.generation;
  }
  /// How many values it holds.
  std::size_t size() const noexcept { return heap_.size(); }
  /// Whether it holds none.
  bool empty() const noexcept { return heap_.empty(); }
  /// The earliest deadline, if any.
  std::optional<Instant> next_deadline() const noexcept {
    if (heap_.empty()) return std::nullopt;
    return entries_[heap_[0]].deadline;
  }

  /// The next value whose deadline passed; pending until one does; nullopt when the queue
  /// is empty (as tokio's: values inserted later come out of later polls).
  Poll<std::optional<Expired>> poll_next(Context& cx) {
    if (heap_.empty()) return Poll<std::optional<Expired>>(std::nullopt);
    const std::uint32_t slot = heap_[0];
    const Instant due = entries_[slot].deadline;
    if (!sleep_) {
      sleep_.emplace(sleep_until(due));
    } else if (sleep_->deadline() != due) {
      sleep_->reset(due);
    }
    if (sleep_->poll(cx).is_pending()) return pending;
    const Key key{slot, entries_[slot].generation};
    return Poll<std::optional<Expired>>(Expired{take(slot), key, due});
  }

 private:
  struct Entry {
    std::optional<T> value;  // empty while the slot is free
    Instant deadline{};
    std::uint64_t order = 0;       // among equal deadlines: which was set first
    std::size_t heap_index = 0;    // where it is in heap_
    std::uint32_t generation = 1;  // bumped when the slot is freed; 0 skipped (Key{})
  };

  // Slots are numbered 0 .. kMaxSlots - 1, so a slot and the count fit a Key's 32 bits.
  static constexpr std::size_t kMaxSlots = 0xFFFF'FFFF;

  // Room for `n` elements in `v`, doubling (a reserve to n per insert would copy each time).
  static void reserve_room(std::vector<std::uint32_t>& v, std::size_t n) {
    if (v.capacity() < n) v.reserve(std::max(n, 2 * v.capacity()));
  }
  std::uint32_t checked(const Key& key, const char* what) const {
    if (!contains(key)) {
      throw std::invalid_argument(std::string("spool::DelayQueue::") + what +
                                  ": the key names no value (it expired or was removed)");
    }
    return key.slot;
  }
  bool earlier(std::size_t a, std::size_t b) const noexcept {
    const Entry& x = entries_[heap_[a]];
    const Entry& y = entries_[heap_[b]];
    return x.deadline != y.deadline ? x.deadline < y.deadline : x.order < y.order;
  }
  void swap_at(std::size_t a, std::size_t b) noexcept {
    std::swap(heap_[a], heap_[b]);
    entries_[heap_[a]].heap_index = a;
    entries_[heap_[b]].heap_index = b;
  }
  // Restores the heap around position i, whose entry changed.
  void sift(std::size_t i) noexcept {
    while (i > 0 && earlier(i, (i - 1) / 2)) {
      swap_at(i, (i - 1) / 2);
      i = (i - 1) / 2;
    }
    for (;;) {
      std::size_t least = i;
      for (const std::size_t c : {2 * i + 1, 2 * i + 2}) {
        if (c < heap_.size() && earlier(c, least)) least = c;
      }
      if (least == i) return;
      swap_at(i, least);
      i = least;
    }
  }
  void set_deadline(std::uint32_t slot, Instant deadline) {
    Entry& e = entries_[slot];
    e.deadline = deadline;
    e.order = next_order_++;
    sift(e.heap_index);
    // A waiter sleeping until a later deadline must wake for this one: move the Sleep,
    // which keeps its waker. (A later head needs nothing: poll_next moves it then.)
    if (sleep_ && heap_[0] == slot && deadline < sleep_->deadline()) sleep_->reset(deadline);
  }
  // The value moves out first: if T's move throws, nothing changed. free_ has room for
  // every slot (insert_at reserved it), so nothing after throws.
  T take(std::uint32_t slot) {
    Entry& e = entries_[slot];
    T value = std::move(*e.value);
    e.value.reset();
    if (++e.generation == 0) e.generation = 1;
    free_.push_back(slot);
    const std::size_t i = e.heap_index;
    swap_at(i, heap_.size() - 1);
    heap_.pop_back();
    if (i < heap_.size()) sift(i);
    return value;
  }

  std::vector<Entry> entries_;       // by slot
  std::vector<std::uint32_t> free_;  // slots to reuse
  std::vector<std::uint32_t> heap_;  // slots, a binary min-heap by (deadline, order)
  std::uint64_t next_order_ = 0;
  std::optional<Sleep> sleep_;  // until the earliest deadline, from the first poll
};

}  // namespace spool
