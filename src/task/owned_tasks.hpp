// The list of every live task of a runtime, so that shutdown can cancel them all.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>

#include "spool/detail/spin_lock.hpp"
#include "task/drain_count.hpp"
#include "task/header.hpp"
#include "task/inspection_count.hpp"

namespace spool::detail {

// Sharded by runs of task ids (shard_of), so that a spawning thread keeps its shards' lines
// in its cache. The list holds one reference to each task in it.
class OwnedTasks {
 public:
  // `drained_channels`: bit c set for each complete-on-close channel c; their live tasks are
  // counted in drain().
  explicit OwnedTasks(std::uint64_t drained_channels = 0) noexcept
      : drained_channels_(drained_channels) {
    if (drained_channels != 0) {
      for (Shard& s : shards_) s.bind_mode = Shard::BindMode::kLinkCountDrained;
    }
  }

  // Adds a new task; false (and nothing changes) once close() was called, or once
  // begin_drain() was called for a task of a channel that is not complete-on-close.
  // Inline, with remove: they are half of every spawn's cost.
  bool bind(TaskHeader* task) noexcept {
    Shard& s = shard_of(task);
    std::lock_guard lock(s.mutex);
    if (s.bind_mode != Shard::BindMode::kLink && !admit(s, *task)) return false;
    link(s, task);
    return true;
  }
  // Removes `task` if it is in the list; true if it was (the caller drops its reference).
  bool remove(TaskHeader* task) noexcept {
    Shard& s = shard_of(task);
    {
      std::lock_guard lock(s.mutex);
      if (task->owned_prev == nullptr) return false;  // not in the list (popped at shutdown)
      unlink(s, task);
    }
    if (is_drained(*task)) drain_.task_done();  // after the lock: it may wake the drain
    return true;
  }
  // Refuses every later bind.
  void close() noexcept;
  // Refuses later binds of tasks that are not on complete-on-close channels.
  void begin_drain() noexcept;
  // Calls `fn` on each task not on a complete-on-close channel, under the shard locks (fn
  // must not touch the list).
  void for_each_undrained(const std::function<void(TaskHeader&)>& fn);
  // The live tasks of complete-on-close channels, and the CloseGuards held.
  DrainCount& drain() noexcept { return drain_; }
  // Whether `task` is on a complete-on-close channel.
  bool is_drained(const TaskHeader& task) const noexcept {
    return drained_channels_ != 0 && ((drained_channels_ >> task.channel) & 1) != 0;
  }
  // Removes and returns some task (its reference goes to the caller), or null when empty.
  TaskHeader* pop() noexcept;
  // Calls `fn` on each task, under the shard locks (fn must not touch the list).
  void for_each(const std::function<void(TaskHeader&)>& fn);
  // The number of tasks in the list (approximate while tasks come and go).
  std::size_t size() const noexcept;
  // The readers holding (or about to take) inspection claims on these tasks.
  InspectionCount& inspections() noexcept { return inspections_; }

 private:
  static constexpr std::size_t kShards = 16;
  // A thread takes its ids in blocks of 1,024 (task/harness.cpp). A run of 256 of them goes to
  // two shards, even ids to one and odd to the other: a thread's spawns keep those lines and
  // list heads in its cache, where one id per shard made every bind fetch a line a remover
  // had just taken; and consecutive tasks (a chain: each spawns the next and ends) never
  // share a list, so a bind never links to the task about to leave. More shards per run
  // spread the removers of a run, but cost the spawner the misses this avoids.
  static constexpr unsigned kRunBits = 8;
  // The critical sections are a few pointer writes: a spin lock is cheaper than a mutex.
  struct alignas(64) Shard {
    SpinLock mutex;
    TaskHeader* head = nullptr;  // guarded by mutex
    // Guarded by mutex: what bind does besides linking the task, in one byte, so that a
    // runtime without complete-on-close channels that is not shutting down tests one thing.
    enum class BindMode : std::uint8_t {
      kLink,              // link every task
      kLinkCountDrained,  // ... and count those of complete-on-close channels (drain())
      kDrainedOnly,       // begin_drain was called: refuse the others
      kRefuse,            // close was called: refuse every task
    } bind_mode = BindMode::kLink;
    // Tasks in this shard's list. Written under mutex (relaxed), read relaxed by size():
    // a per-shard count, so that binds and removes on different threads do not share
    // one counter's cache line.
    std::atomic<std::size_t> count{0};
  };
  Shard& shard_of(const TaskHeader* task) noexcept {
    return shards_[((task->id >> kRunBits << 1) | (task->id & 1)) % kShards];
  }

  // Whether a shard not in kLink mode takes `t` (counting it if it is drained); the caller
  // holds the shard's lock.
  bool admit(Shard& s, const TaskHeader& t) noexcept;
  // Puts `t` at the head of its shard's list. A task is in the list iff owned_prev != nullptr;
  // the head's owned_prev points at itself. The caller holds the shard's lock.
  static void link(Shard& s, TaskHeader* t) noexcept {
    t->owned_next = s.head;
    t->owned_prev = t;
    if (s.head) s.head->owned_prev = t;
    s.head = t;
    s.count.store(s.count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // Takes `t` out of its shard's list (the caller holds the shard's lock).
  static void unlink(Shard& s, TaskHeader* t) noexcept {
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

  std::array<Shard, kShards> shards_;
  const std::uint64_t drained_channels_;
  DrainCount drain_;
  InspectionCount inspections_;
};

}  // namespace spool::detail
