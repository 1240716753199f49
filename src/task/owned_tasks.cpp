#include "task/owned_tasks.hpp"

namespace spool::detail {

bool OwnedTasks::admit(Shard& s, const TaskHeader& t) noexcept {
  if (s.bind_mode == Shard::BindMode::kRefuse) return false;
  if (is_drained(t)) {
    drain_.add_task();
    return true;
  }
  return s.bind_mode != Shard::BindMode::kDrainedOnly;
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
