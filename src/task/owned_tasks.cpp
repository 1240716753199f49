#include "task/owned_tasks.hpp"

namespace spool::detail {

// A task is in its shard's list iff owned_prev != nullptr or it is the head; membership is
// tracked with owned_prev pointing at itself for the head.
void OwnedTasks::unlink(Shard& s, TaskHeader* t) noexcept {
  if (s.head == t) {
    s.head = t->owned_next;
    if (s.head) s.head->owned_prev = s.head;
  } else {
    t->owned_prev->owned_next = t->owned_next;
    if (t->owned_next) t->owned_next->owned_prev = t->owned_prev;
  }
  t->owned_prev = t->owned_next = nullptr;
  s.count.store(s.count.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}

bool OwnedTasks::bind(TaskHeader* t) noexcept {
  Shard& s = shard_of(t);
  std::lock_guard lock(s.mutex);
  if (s.bind_mode != Shard::BindMode::kLink) {
    if (s.bind_mode == Shard::BindMode::kRefuse) return false;
    if (is_drained(*t)) {
      drain_.add_task();
    } else if (s.bind_mode == Shard::BindMode::kDrainedOnly) {
      return false;
    }
  }
  t->owned_next = s.head;
  t->owned_prev = t;  // head marker
  if (s.head) s.head->owned_prev = t;
  s.head = t;
  s.count.store(s.count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return true;
}

bool OwnedTasks::remove(TaskHeader* t) noexcept {
  Shard& s = shard_of(t);
  {
    std::lock_guard lock(s.mutex);
    if (t->owned_prev == nullptr) return false;  // not in the list (popped at shutdown)
    unlink(s, t);
  }
  if (is_drained(*t)) drain_.task_done();  // after the lock: it may wake the drain
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
    s.bind_mode = Shard::BindMode::kRefuse;
  }
}

void OwnedTasks::begin_drain() noexcept {
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mutex);
    if (s.bind_mode != Shard::BindMode::kRefuse) s.bind_mode = Shard::BindMode::kDrainedOnly;
  }
}

TaskHeader* OwnedTasks::pop() noexcept {
  for (Shard& s : shards_) {
    TaskHeader* t;
    {
      std::lock_guard lock(s.mutex);
      t = s.head;
      if (t == nullptr) continue;
      unlink(s, t);
    }
    if (is_drained(*t)) drain_.task_done();
    return t;
  }
  return nullptr;
}

void OwnedTasks::for_each_undrained(const std::function<void(TaskHeader&)>& fn) {
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mutex);
    for (TaskHeader* t = s.head; t; t = t->owned_next) {
      if (!is_drained(*t)) fn(*t);
    }
  }
}

void OwnedTasks::for_each(const std::function<void(TaskHeader&)>& fn) {
  // dump() and shutdown only: a spin lock held while formatting is fine for a debugging aid.
  for (Shard& s : shards_) {
    std::lock_guard lock(s.mutex);
    for (TaskHeader* t = s.head; t; t = t->owned_next) fn(*t);
  }
}

}  // namespace spool::detail
