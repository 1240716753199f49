// TimerWheel's placement, linking and slot scanning (the poll loop is in the header).
#include "driver/time/wheel.hpp"

#include <algorithm>
#include <bit>
#include <cassert>

namespace spool::detail {
namespace {

constexpr unsigned kSlotBits = 6;  // log2(TimerWheel::kSlots)
constexpr unsigned kTop = TimerWheel::kLevels - 1;
constexpr std::uint64_t kSlotMask = TimerWheel::kSlots - 1;
static_assert(TimerWheel::kSlots == 1u << kSlotBits, "a level's bitmap is one 64-bit word");

constexpr unsigned shift_of(unsigned level) { return level * kSlotBits; }

}  // namespace

bool TimerWheel::insert(TimerNode* node) noexcept {
  assert(!node->linked);
  node->tick = node->when / tick_length_ + (node->when % tick_length_ != 0);  // rounded up
  if (node->tick < current_) return false;
  link(node);
  return true;
}

void TimerWheel::remove(TimerNode* node) noexcept {
  assert(node->linked);
  unlink(node);
}

std::optional<std::uint64_t> TimerWheel::next_expiration() const noexcept {
  const auto exp = next_slot();
  if (!exp) return std::nullopt;
  return exp->level == 0 ? latest_[exp->slot] : (exp->tick - 1) * tick_length_;
}

bool TimerWheel::empty() const noexcept {
  return std::all_of(occupied_.begin(), occupied_.end(), [](std::uint64_t m) { return m == 0; });
}

std::optional<TimerWheel::Expiration> TimerWheel::next_slot() const noexcept {
  // A level-L node expires within the current level-L rotation, before any slot of level L+1
  // after cur(L+1) starts: the lowest non-empty level holds the earliest slot.
  for (unsigned level = 0; level < kLevels; ++level) {
    const std::uint64_t occupied = occupied_[level];
    if (occupied == 0) continue;
    const unsigned shift = shift_of(level);
    const std::uint64_t cur = current_ >> shift;
    // Rotating puts slot cur at bit 0: the lowest set bit is the distance, in slots, to the
    // next occupied slot (0 only for level 0's tick in progress), and counting from cur also
    // reads the top level as the ring it is.
    const auto dist = static_cast<unsigned>(
        std::countr_zero(std::rotr(occupied, static_cast<int>(cur & kSlotMask))));
    assert(dist > 0 || level == 0);
    return Expiration{level, static_cast<unsigned>((cur + dist) & kSlotMask),
                      (cur + dist) << shift};
  }
  return std::nullopt;
}

void TimerWheel::cascade(const Expiration& exp) noexcept {
  // Never back into this slot: the slot containing current_ is empty above level 0.
  while (TimerNode* node = heads_[exp.level][exp.slot]) {
    unlink(node);
    link(node);
  }
}

void TimerWheel::link(TimerNode* node) noexcept {
  assert(node->tick >= current_);
  // The level is the highest 6-bit group of the tick in which it and current_ differ (0 if
  // none): below the top, the node then expires within the current rotation of that level.
  unsigned level =
      static_cast<unsigned>(std::bit_width((node->tick ^ current_) | 1) - 1) / kSlotBits;
  std::uint64_t slot;
  if (level < kTop) {
    slot = (node->tick >> shift_of(level)) & kSlotMask;
    if (level == 0) latest_[slot] = std::max(latest_[slot], node->when);
  } else {
    // The top level is a ring of the 63 slots after cur(top); anything further waits in the
    // last of them (slot cur - 1), which is reached before its tick and places it again.
    level = kTop;
    const std::uint64_t cur = current_ >> shift_of(kTop);
    const std::uint64_t dist =
        std::min<std::uint64_t>((node->tick >> shift_of(kTop)) - cur, kSlots - 1);
    slot = (cur + dist) & kSlotMask;
  }
  TimerNode*& head = heads_[level][slot];
  node->prev = nullptr;
  node->next = head;
  if (head != nullptr) head->prev = node;
  head = node;
  node->level = static_cast<std::uint8_t>(level);
  node->slot = static_cast<std::uint8_t>(slot);
  node->linked = true;
  occupied_[level] |= std::uint64_t{1} << slot;
}

void TimerWheel::unlink(TimerNode* node) noexcept {
  TimerNode*& head = heads_[node->level][node->slot];
  if (node->prev != nullptr) {
    node->prev->next = node->next;
  } else {
    head = node->next;
  }
  if (node->next != nullptr) node->next->prev = node->prev;
  if (head == nullptr) {
    occupied_[node->level] &= ~(std::uint64_t{1} << node->slot);
    if (node->level == 0) latest_[node->slot] = 0;
  }
  node->prev = nullptr;
  node->next = nullptr;
  node->linked = false;
}

}  // namespace spool::detail
