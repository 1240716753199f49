// The current-thread scheduler: tasks run on a thread inside Runtime::block_on.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "context/deferred.hpp"
#include "driver/driver.hpp"
#include "driver/thread_parker.hpp"
#include "scheduler/levels.hpp"
#include "scheduler/picker.hpp"
#include "scheduler/run_queues.hpp"
#include "scheduler/task_fifo.hpp"
#include "spool/core/context.hpp"
#include "spool/detail/runtime_config.hpp"
#include "spool/metrics.hpp"
#include "task/owned_tasks.hpp"
#include "task/scheduler_api.hpp"

namespace spool::detail {

class RuntimeShared;

// One block_on thread at a time drives the tasks: it holds the driver role (tokio's "core")
// and runs tasks while its own root future waits. The other block_on threads wait for their
// roots, and one of them takes the role over when the driver's block_on returns. Shutdown
// takes the role too, before it drains the queues, and keeps it: from then on no thread
// drives.
class CurrentThread final : public Scheduler {
 public:
  // `runtime` is what the driving thread is marked as belonging to while it runs tasks;
  // it parks in `driver` (unless a background driver thread holds it).
  CurrentThread(RuntimeShared* runtime, const RuntimeConfig& config, const LevelTable& levels,
                OwnedTasks& owned, std::shared_ptr<Driver> driver);
  CurrentThread(const CurrentThread&) = delete;
  CurrentThread& operator=(const CurrentThread&) = delete;

  void schedule(TaskHeader* task, bool is_yield) noexcept override;
  // Removes a completed task from the owned-task list (see Scheduler::release).
  bool release(TaskHeader* task) noexcept override { return owned_.remove(task); }
  // Runs fn on a thread that is not driving; throws std::logic_error on the driving thread
  // (its one thread runs every task and cannot be handed over).
  void block_in_place(const std::function<void()>& fn);

  // --- The driver role (for Runtime::block_on) ---
  // Claims the role for the calling thread; false if another thread drives or the runtime
  // is shut down.
  bool try_take_core() noexcept;
  // Runs tasks until `root_woken` is set (returns true) or the runtime shuts down (returns
  // false: the caller must release the role and wait for its root alone). Meanwhile the
  // thread counts as one of the runtime's own (a shutdown started by a task runs on a
  // detached thread, which takes the role once this thread gives it back). `root_woken` is
  // the RootWaker's flag: set with release ordering by its wake(), consumed here by
  // exchange(false, acquire), which pairs with it.
  // `slot` (holding the runtime's driver) is the block_on call's: tasks are polled with it.
  bool run_until(std::atomic<bool>& root_woken, ReactorSlot& slot);
  // Gives the role back and wakes the threads waiting for it. After a shutdown began, the
  // releasing thread first drops what is left in the local queue (the shutdown may have
  // given up waiting for the role: nobody else would).
  void release_core() noexcept;
  // A block_on thread that does not drive parks on its own `parker` until its root is woken
  // (returns false), or until it could claim the role (returns true: it now drives). It
  // does not park in the driver: the driving thread does (and fires its timers).
  bool wait_for_root(std::atomic<bool>& root_woken, ThreadParker& parker);
  // True if a task waits to be run (in either queue), whether or not a thread drives. For a
  // paused clock, which may jump only when no task is runnable.
  bool has_runnable() const noexcept;
  // The parker the driving thread parks on: root wakers unpark it too. Shared with them,
  // since a waker may outlive the runtime.
  const std::shared_ptr<ThreadParker>& core_parker() const noexcept { return parker_; }

  // --- Shutdown steps (runtime/shared.cpp runs them in order) ---
  // Refuses remote schedules, stops the driving thread from driving, and takes the driver
  // role for the shutdown (waiting for the driver's current poll at most until `deadline`).
  // Returns 1 if the driving thread was left inside a poll past the deadline, else 0.
  std::size_t close_and_stop(std::optional<std::chrono::steady_clock::time_point> deadline);
  // Drops every queued notification; the local queue only if the role was taken (else the
  // driver drops it when it gives the role back).
  void drain_queues() noexcept;
  // Adds this scheduler's counters (one "worker": the driving thread) to `m`.
  void fill_metrics(RuntimeMetrics& m);

 private:
  bool is_shutdown() const noexcept { return shutdown_.load(std::memory_order_acquire); }
  bool holds_core() const noexcept {
    return core_thread_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  // The driving thread's own queues as pick_task sees them.
  struct OwnQueues;
  TaskHeader* pop_local(std::uint16_t channel) noexcept;
  // Queues `t` in the local FIFO of its channel (the caller counts it in its level).
  void push_local(TaskHeader* t) noexcept;
  // The next task by level and channel (scheduler/picker.hpp), or null.
  TaskHeader* next_task() noexcept;
  // Drops every notification in the local queue and refuses later local schedules. Only
  // by the holder of the role.
  void close_local() noexcept;
  // Runs up to event_interval tasks; false when there was none. With more than one level,
  // tasks that yielded (in `deferred`) rejoin their channels before each pick, so that the
  // choice of level sees them.
  bool run_batch(ReactorSlot& slot, DeferredWakes& deferred);

  RuntimeShared* const runtime_;
  const RuntimeConfig& config_;
  const LevelTable& levels_;
  OwnedTasks& owned_;
  const std::shared_ptr<Driver> driver_;
  // The inject and EDF queues (schedules from other threads, EDF channels), the level
  // counts, the yield request and the per-channel counters; the driving thread is poller 0.
  RunQueues queues_;
  // Schedules from the driving thread, one per channel; touched only by the thread holding
  // the role (the core_taken_ acquire/release pair hands them over, with tick_, cursor_ and
  // local_closed_).
  std::vector<TaskFifo> local_;
  std::uint32_t tick_ = 0;
  LevelCursor cursor_;
  // Set by the shutdown's drain: later local schedules drop their notification at once.
  bool local_closed_ = false;
  // The driving thread parks here; remote schedules unpark it. Shared with the root wakers
  // of block_on calls, which may outlive the runtime.
  std::shared_ptr<ThreadParker> parker_ = std::make_shared<ThreadParker>();
  // Exchange(true, acquire) by the thread that claims the role; store(false, release) when
  // it gives it back (under waiters_mutex_, see release_core).
  std::atomic<bool> core_taken_{false};
  // The thread that drives now (for schedule's local/remote choice); written by the driver
  // (relaxed: each thread only compares it with itself).
  std::atomic<std::thread::id> core_thread_{};
  // Set once by close_and_stop (release) before it unparks the driver; read (acquire) by the
  // driver's loop and by try_take_core / wait_for_root, which then no longer claim the role.
  std::atomic<bool> shutdown_{false};
  // True once close_and_stop holds the role (it keeps it); touched only by the shutdown.
  bool shutdown_holds_core_ = false;
  // The parkers of block_on threads waiting in wait_for_root while another thread drives,
  // and the shutdown waiting for the role on core_released_: release_core wakes both.
  std::mutex waiters_mutex_;
  std::condition_variable core_released_;
  std::vector<ThreadParker*> waiters_;  // guarded by waiters_mutex_
  // Counters: written by the driver, read by metrics() (relaxed); local_len_ (the tasks in
  // all local FIFOs) also by has_runnable (relaxed, ordered by the time driver's jump mutex;
  // see there).
  std::atomic<std::uint64_t> polls_{0};
  std::atomic<std::uint64_t> parks_{0};
  std::atomic<std::size_t> local_len_{0};
};

}  // namespace spool::detail
