// RuntimeShared: one runtime's state. It owns its configuration, the owned-task list, the
// blocking pool and its scheduler (one of the two flavours), and runs the ordered shutdown.
// Handles, JoinHandles (through their tasks) and the runtime's threads share it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "blocking/pool.hpp"
#include "driver/driver.hpp"
#include "runtime/attachment.hpp"
#include "runtime/task_hooks.hpp"
#include "scheduler/current_thread/current_thread.hpp"
#include "scheduler/levels.hpp"
#include "scheduler/multi_thread/multi_thread.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/metrics.hpp"
#include "spool/runtime.hpp"
#include "task/owned_tasks.hpp"

namespace spool::detail {

class RuntimeShared : public std::enable_shared_from_this<RuntimeShared> {
 public:
  explicit RuntimeShared(RuntimeConfig config);
  ~RuntimeShared();
  RuntimeShared(const RuntimeShared&) = delete;
  RuntimeShared& operator=(const RuntimeShared&) = delete;

  // Starts the threads; called once, right after construction, by build_runtime. Throws
  // std::system_error when a worker thread cannot start, after stopping the ones that did.
  void start();

  // Spawns a Task frame (its promise runs as the outermost of its own chain) onto the
  // spawning task's channel, with its deadline on an earliest-deadline-first channel, if a
  // task of this runtime spawns it; else onto the default channel.
  // The task records `name` and `where` (spawn_task: kNameOwnedBit) and owns a copied name,
  // even should the spawn fail.
  TaskHeader* spawn(TaskPromiseBase& promise, std::coroutine_handle<> frame, const char* name,
                    SpawnLocation where);
  // The same onto `channel` (checked by check_channel) with `deadline` (null: none), which
  // orders the task on an earliest-deadline-first channel.
  TaskHeader* spawn_on(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                       std::uint16_t channel, const Deadline* deadline, const char* name,
                       SpawnLocation where);
  // A spawn as if made from inside `spawner`'s poll (may be null: from outside any task):
  // onto its channel, with its deadline on an EDF channel (spool::join's stolen children).
  TaskHeader* spawn_from(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                         const TaskHeader* spawner, const char* name = nullptr,
                         SpawnLocation where = {});
  // Throws std::invalid_argument unless `channel` is one of this runtime's channels, and an
  // earliest-deadline-first one if `with_deadline`.
  void check_channel(const ChannelId& channel, bool with_deadline) const;
  // The channel called `name`; throws std::invalid_argument if there is none.
  ChannelId channel(std::string_view name) const;
  const LevelTable& levels() const noexcept { return levels_; }
  // Spawns a blocking call; throws std::system_error (the task is then gone, cancelled) when
  // the blocking pool has no thread and cannot start one.
  TaskHeader* spawn_blocking(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                             SpawnLocation where);
  void block_in_place(const std::function<void()>& fn);
  // See detail::block_off_core (runtime/root_waker.hpp).
  void block_off_core(const std::function<void()>& fn);

  // The ordered shutdown, and what its drain found; a later call returns nullopt at once
  // (shutdown_report() has the first one's report). See docs/scheduler.md and, for the drain
  // of complete-on-close channels, docs/levels.md.
  std::optional<ShutdownReport> shutdown(std::optional<std::chrono::nanoseconds> timeout);
  // What the shutdown found (a default report before it ran).
  ShutdownReport shutdown_report() {
    std::lock_guard lock(shutdown_mutex_);
    return report_;
  }

  // Keeps `a` until the shutdown (runtime/attachment.hpp); after the shutdown began, destroys it
  // at once.
  void attach(std::unique_ptr<Attachment> a);

  // CloseGuards: a shutdown waits until every one taken is released.
  void add_close_guard() noexcept { owned_.drain().add_guard(); }
  void release_close_guard() noexcept { owned_.drain().guard_done(); }

  RuntimeMetrics metrics();
  // Counts one spool::fs operation sent to the blocking pool (RuntimeMetrics::fs_blocking_ops).
  void count_fs_blocking_op() noexcept { fs_blocking_ops_.fetch_add(1, std::memory_order_relaxed); }
  // Counts one spool::fs operation submitted to a worker's ring (RuntimeMetrics::fs_ring_ops).
  void count_fs_ring_op() noexcept { fs_ring_ops_.fetch_add(1, std::memory_order_relaxed); }
  // Counts one spool::fs read served from the page cache on the polling thread
  // (RuntimeMetrics::fs_inline_reads).
  void count_fs_inline_read() noexcept { fs_inline_reads_.fetch_add(1, std::memory_order_relaxed); }
  std::string dump();
  // Runtime::tasks().
  std::vector<TaskSnapshot> tasks();

  // The current-thread scheduler, or null for a multi-thread runtime (block_on drives it).
  CurrentThread* current_thread() noexcept { return current_thread_.get(); }
  // Whether the runtime runs the multi-thread scheduler (spool::join spawns from its other
  // threads).
  bool is_multi_thread() const noexcept { return multi_thread_ != nullptr; }
  // The driver stack its threads park in, which its timers are armed in.
  const std::shared_ptr<Driver>& driver() const noexcept { return driver_; }

 private:
  // Calls fn with whichever scheduler this runtime owns.
  template <class Fn>
  decltype(auto) with_scheduler(Fn&& fn) {
    if (multi_thread_) return fn(*multi_thread_);
    return fn(*current_thread_);
  }
  TaskHeader* bind_new(TaskHeader* task);
  // Binds a new task and queues it (a spawn's last step); returns it.
  TaskHeader* publish(TaskHeader* task);
  // spawn with more than one channel or an EDF one (the channel is inherited or the default
  // one), or with task times (each task gets a TaskSide). Not inlined: spawn's fast path then
  // saves no registers for it.
  [[gnu::noinline]] TaskHeader* spawn_inheriting(TaskPromiseBase& promise,
                                                 std::coroutine_handle<> frame, const char* name,
                                                 SpawnLocation where);
  // Shutdown's drain: cancels the tasks of other channels and runs the runtime until the
  // complete-on-close channels' tasks are done and no CloseGuard is held, or `deadline`.
  ShutdownReport drain(std::optional<std::chrono::steady_clock::time_point> deadline);
  // After close_and_stop left threads behind: records in report_ the tasks still in a poll
  // (at least one thread: one may be stuck outside any task).
  void report_left_in_poll();
  // The TaskSide a new task needs (`edf`: an EDF channel's, with `deadline` or none), or
  // null. On a throw the task's frame (its Task gave it up) and an owned name are freed.
  // Inline: most spawns (a FIFO channel, no task times) need none and learn it without a call.
  TaskSide::Ptr side_for(bool edf, const Deadline* deadline, std::coroutine_handle<> frame,
                         const char* name, SpawnLocation where) const {
    if (!edf && !timed_tasks_) return nullptr;
    return make_side(edf, deadline, frame, name, where);
  }
  TaskSide::Ptr make_side(bool edf, const Deadline* deadline, std::coroutine_handle<> frame,
                          const char* name, SpawnLocation where) const;
  // What Runtime::tasks() says of `t`, but its backtrace (which needs a claim).
  TaskSnapshot snapshot_of(const TaskHeader& t) const;
  // One line of dump() for `t` (without its backtrace: callers hold the list's lock).
  void describe(const TaskHeader& t, std::ostream& out) const;

  const RuntimeConfig config_;
  const LevelTable levels_;  // first after the configuration: it validates it
  // Stamped into this runtime's ChannelIds, so that another runtime's id is refused.
  const std::uint32_t tag_;
  // One channel, and a FIFO one: a spawn has nothing to choose or inherit.
  const bool single_fifo_channel_;
  // The task hooks and task times, or null without either (then no scheduler has an
  // observer).
  const std::unique_ptr<TaskObserver> task_hooks_;
  // The runtime measures task times: every task it spawns has a TaskSide with their counters.
  const bool timed_tasks_;
  // One FIFO channel and no task times: spawn's fast path has nothing to choose, inherit or
  // time, only a spawn hook to tell (one predicted branch).
  const bool plain_spawn_;
  OwnedTasks owned_{levels_.complete_on_close_mask()};
  BlockingPool blocking_;
  BlockingScheduler blocking_scheduler_{blocking_, owned_};
  // Shared with the timers made under this runtime, which may outlive it (they then report
  // TimerShutdown). Shut down last.
  std::shared_ptr<Driver> driver_;
  // Exactly one of the two is set, for the runtime's whole life.
  std::unique_ptr<MultiThread> multi_thread_;
  std::unique_ptr<CurrentThread> current_thread_;
  Scheduler* scheduler_;  // whichever of the two is set
  // Added to by fs/ on the pool thread, as each job starts to run; read by metrics();
  // relaxed: a count that orders nothing, pairs with no other access.
  Atomic<std::uint64_t> fs_blocking_ops_{0};
  // Added to by fs/ on a worker as it submits an operation to its ring; read by metrics();
  // relaxed, as fs_blocking_ops_.
  Atomic<std::uint64_t> fs_ring_ops_{0};
  // Added to by fs/ on the polling thread as a read completes from the page cache; read by
  // metrics(); relaxed, as fs_blocking_ops_.
  Atomic<std::uint64_t> fs_inline_reads_{0};
  std::mutex shutdown_mutex_;  // serialises shutdown()
  bool shut_down_ = false;     // guarded by shutdown_mutex_
  ShutdownReport report_;      // guarded by shutdown_mutex_: what the shutdown found
  // Guarded by shutdown_mutex_; last, so that it stops first should the destructor free it.
  std::unique_ptr<Attachment> attachment_;
};

}  // namespace spool::detail
