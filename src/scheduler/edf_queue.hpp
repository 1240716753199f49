// The run queue of an earliest-deadline-first channel (docs/levels.md): one per channel, shared
// by every thread of the runtime (no local rings: the earliest deadline is a global order), an
// intrusive pairing heap under a spin lock, so that pushing never allocates.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "spool/detail/atomic.hpp"
#include "spool/detail/spin_lock.hpp"
#include "task/header.hpp"

namespace spool::detail {

class EdfQueue {
 public:
  // Adds `task` (ordered by its deadline; it has an EdfNode); false when closed (the caller
  // keeps the reference).
  bool push(TaskHeader* task) noexcept {
    task->side->edf->heap_child = nullptr;
    task->queue_next = nullptr;  // the heap's sibling link
    std::lock_guard lock(lock_);
    if (closed_) return false;
    task->side->edf->heap_seq = next_seq_++;
    root_ = meld(root_, task);
    len_.store(len_.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
    return true;
  }
  // Takes the task with the earliest deadline, or null. The first time a task is taken, a
  // start after its deadline (by `now`) counts as a miss.
  TaskHeader* pop(std::chrono::steady_clock::time_point now) noexcept {
    if (is_empty()) return nullptr;
    std::lock_guard lock(lock_);
    TaskHeader* t = root_;
    if (t == nullptr) return nullptr;
    EdfNode& node = *t->side->edf;
    root_ = merge_pairs(node.heap_child);
    node.heap_child = nullptr;
    len_.store(len_.load(std::memory_order_relaxed) - 1, std::memory_order_seq_cst);
    if (!node.deadline_checked) {
      node.deadline_checked = true;
      if (now > t->deadline()) {
        misses_.store(misses_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      }
    }
    return t;
  }
  void close() noexcept {
    std::lock_guard lock(lock_);
    closed_ = true;
  }
  // Lock-free hint, seq_cst: the same pairing with the idle state as InjectQueue::is_empty.
  bool is_empty() const noexcept { return len_.load(std::memory_order_seq_cst) == 0; }
  std::size_t len() const noexcept { return len_.load(std::memory_order_relaxed); }
  std::uint64_t misses() const noexcept { return misses_.load(std::memory_order_relaxed); }

 private:
  // Pairing heap: roots have no sibling; a node's children hang from its EdfNode's
  // heap_child, linked through queue_next.
  static TaskHeader* meld(TaskHeader* a, TaskHeader* b) noexcept {
    if (a == nullptr) return b;
    if (b == nullptr) return a;
    if (before(b, a)) std::swap(a, b);
    b->queue_next = a->side->edf->heap_child;
    a->side->edf->heap_child = b;
    return a;
  }
  // The heap's order: the earlier deadline, then the earlier arrival (so that tasks with
  // equal deadlines, or none, run in FIFO order and none is passed over forever).
  static bool before(const TaskHeader* a, const TaskHeader* b) noexcept {
    const EdfNode& x = *a->side->edf;
    const EdfNode& y = *b->side->edf;
    return x.deadline_ticks < y.deadline_ticks ||
           (x.deadline_ticks == y.deadline_ticks && x.heap_seq < y.heap_seq);
  }
  // The two-pass merge of a removed root's children, without recursion.
  static TaskHeader* merge_pairs(TaskHeader* first) noexcept {
    TaskHeader* pairs = nullptr;  // melded pairs, a stack linked through queue_next
    while (first != nullptr) {
      TaskHeader* a = first;
      TaskHeader* b = a->queue_next;
      if (b == nullptr) {
        a->queue_next = pairs;
        pairs = a;
        break;
      }
      first = b->queue_next;
      a->queue_next = b->queue_next = nullptr;
      TaskHeader* m = meld(a, b);
      m->queue_next = pairs;
      pairs = m;
    }
    TaskHeader* result = nullptr;
    while (pairs != nullptr) {
      TaskHeader* next = pairs->queue_next;
      pairs->queue_next = nullptr;
      result = meld(result, pairs);
      pairs = next;
    }
    return result;
  }

  SpinLock lock_;
  TaskHeader* root_ = nullptr;  // guarded by lock_
  std::uint64_t next_seq_ = 0;  // guarded by lock_
  bool closed_ = false;         // guarded by lock_
  // Written under lock_ (seq_cst stores, as InjectQueue's length word), read without it:
  // seq_cst in is_empty, relaxed in len (a hint).
  Atomic<std::size_t> len_{0};
  // Deadline misses: written under lock_ (relaxed), read by metrics() (relaxed).
  std::atomic<std::uint64_t> misses_{0};
};

}  // namespace spool::detail
