#include "task/owned_tasks.hpp"

namespace spool::detail {

// A task is in its shard's list iff owned_prev != nullptr or it is the head; membership is
// tracked with owned_prev pointing at itself for the head.
bool OwnedTasks::bind(TaskHeader* t) noexcept {
  Shard& s = shard_of(t);
  std::lock_guard lock(s.mutex);
  if (s.closed) return false;
  t->owned_next = s.head;
  t->owned_prev = t;  // head marker
  if (s.head) s.head->owned_prev = t;
  s.head = t;
  s.count.store(s.count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}

bool OwnedTasks::remove(TaskHeader* t) noexcept {
  Shard& s = shard_of(t);
  std::lock_guard lock(s.mutex);
  if (t->owned_prev == nullptr) return false;  // not in the list (popped at shutdown)
  if (s.head == t) {
    s.head = t->owned_next;
    if (s.head) s.head->owned_prev = s.head;
  } else {
    t->owned_prev->owned_next = t->owned_next;
    if (t->owned_next) t->owned_next->owned_prev = t->owned_prev;
  }
  t->owned_prev = t->owned_next = nullptr;
  s.count.store(s.count.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  return true;
}

std::size_t OwnedTasks::size() const noexcept {
  std::size_t n = 0;
  for (const Shard& s : shards_) n += s.count.load(std::memory_order_relaxed);
  return n;
}

void OwnedTasks::close() noexcept {
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mutex);
    s.closed = true;
  }
}

TaskHeader* OwnedTasks::pop() noexcept {
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mutex);
    if (TaskHeader* t = s.head) {
      s.head = t->owned_next;
      if (s.head) s.head->owned_prev = s.head;
      t->owned_prev = t->owned_next = nullptr;
      s.count.store(s.count.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
      return t;
    }
  }
  return nullptr;
}

void OwnedTasks::for_each(const std::function<void(const TaskHeader&)>& fn) {
  // dump() only: holding a spin lock while formatting is acceptable for a debugging aid.
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mutex);
    for (TaskHeader* t = s.head; t; t = t->owned_next) fn(*t);
  }
}

}  // namespace spool::detail
