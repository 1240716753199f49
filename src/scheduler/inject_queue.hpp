// The inject queue: tasks scheduled from outside a worker (or overflowing a local queue).
#pragma once

#include <cstddef>
#include <mutex>

#include "scheduler/block_fifo.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/spin_lock.hpp"
#include "task/header.hpp"

namespace spool::detail {

// A FIFO of task pointers (BlockFifo) under a spin lock: its critical sections copy a few
// cache lines of pointers and never touch a task. Each entry owns the task's notification
// reference. After close(), pushes are refused.
class InjectQueue {
 public:
  // Appends; false when closed (the caller keeps the reference and must drop it).
  bool push(TaskHeader* task) noexcept {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    append(task);
    return true;
  }
  // Appends `n` tasks; when closed, returns false and leaves them to the caller.
  bool push_batch(TaskHeader* const* tasks, std::size_t n) noexcept {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    for (std::size_t i = 0; i < n; ++i) fifo_.push_back(tasks[i]);
    publish_len();
    return true;
  }
  TaskHeader* pop() noexcept {
    TaskHeader* t = nullptr;
    pop_n(&t, 1);
    return t;
  }
  // Moves up to `max` tasks into `out`; returns how many.
  std::size_t pop_n(TaskHeader** out, std::size_t max) noexcept {
    if (is_empty()) return 0;
    std::lock_guard lock(mutex_);
    std::size_t n = fifo_.pop_front(out, max);
    publish_len();
    return n;
  }
  void close() noexcept {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  bool is_closed() noexcept {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  // Lock-free hint. Seq_cst: it is the load half of the Dekker pairing between a pusher
  // (push, then read the idle state) and a parking worker (update idle state, then read
  // queue lengths), so that one of the two always sees the other.
  bool is_empty() const noexcept { return len_.load(std::memory_order_seq_cst) == 0; }
  std::size_t len() const noexcept { return len_.load(std::memory_order_relaxed); }

 private:
  // One store per batch: only the last length matters to the pairing with is_empty.
  void publish_len() noexcept { len_.store(fifo_.len(), std::memory_order_seq_cst); }
  void append(TaskHeader* t) noexcept {
    fifo_.push_back(t);
    publish_len();
  }

  // Pointer blocks for up to ~130,000 queued tasks (1 MiB); more link through their headers.
  static constexpr std::size_t kMaxBlocks = 1024;

  // The lock, the length and the FIFO's indices share a cache line (BlockFifo's layout), the one
  // line every push and pop moves.
  SpinLock mutex_;
  bool closed_ = false;  // guarded by mutex_
  // The number of queued tasks. Written only under mutex_ (publish_len: a seq_cst store of
  // the FIFO's length), read without it: seq_cst in is_empty (the
  // Dekker pairing described there, with Idle's seq_cst RMWs), relaxed in len (a hint).
  Atomic<std::size_t> len_{0};
  BlockFifo<TaskHeader, &TaskHeader::queue_next> fifo_{kMaxBlocks};  // guarded by mutex_
};

}  // namespace spool::detail
