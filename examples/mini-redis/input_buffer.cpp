#include "input_buffer.hpp"

#include <algorithm>
#include <cstring>

namespace mini_redis {

InputBuffer::InputBuffer(std::size_t max, MemoryBudget& budget) : max_(max), budget_(budget) {
  reallocate(kBase);
}

InputBuffer::~InputBuffer() { budget_.give_back(capacity_ - kBase); }

InputBuffer::Room InputBuffer::make_room(std::size_t needed) {
  const std::size_t held = end_ - begin_;
  if (held == 0) begin_ = end_ = 0;
  if (capacity_ > kBase && std::max(held, needed) < kBase) {
    // The large command was parsed: its memory goes back (a check per read, and a copy of
    // less than kBase bytes only after a large command). Budget after the allocation: a
    // throw leaves both as they were.
    const std::size_t returned = capacity_ - kBase;
    reallocate(kBase);
    budget_.give_back(returned);
    return Room::kReady;
  }
  if (end_ < capacity_) return Room::kReady;
  if (begin_ > 0) {
    std::memmove(data_.get(), data_.get() + begin_, held);
    begin_ = 0;
    end_ = held;
    return Room::kReady;
  }
  // Full with one incomplete command: twice the size, or just what the command needs when
  // that is less (a single large argument is not given twice its size).
  if (capacity_ >= max_) return Room::kOverOwnLimit;
  std::size_t grown = needed > capacity_ && needed < 2 * capacity_ ? needed : 2 * capacity_;
  grown = std::min(grown, max_);
  if (!budget_.try_take(grown - capacity_)) return Room::kOverSharedLimit;
  try {
    reallocate(grown);
  } catch (...) {
    budget_.give_back(grown - capacity_);  // nothing was taken after all
    throw;
  }
  return Room::kReady;
}

void InputBuffer::reallocate(std::size_t capacity) {
  // For overwrite: a large buffer's pages are touched only as bytes arrive.
  auto fresh = std::make_unique_for_overwrite<char[]>(capacity);
  if (end_ > begin_) std::memcpy(fresh.get(), data_.get() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
  data_ = std::move(fresh);
  capacity_ = capacity;
}

}  // namespace mini_redis
