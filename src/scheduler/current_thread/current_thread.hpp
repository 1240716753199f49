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
#include "scheduler/intrusive_fifo.hpp"
#include "scheduler/levels.hpp"
#include "scheduler/picker.hpp"
#include "scheduler/run_queues.hpp"
#include "spool/core/context.hpp"
#include "spool/detail/runtime_config.hpp"
#include "spool/metrics.hpp"
#include "task/owned_tasks.hpp"
#include "task/scheduler_api.hpp"

namespace spool::detail {

class RuntimeShared;

// One block_on thread at a time holds the core and runs the tasks while its own root
// future waits; the others wait for their roots, and one takes the core over when that
// block_on returns. The shutdown takes the core for good before it drains the queues.
class CurrentThread final : public Scheduler {
 public:
  // `runtime` is what the thread with the core is marked as belonging to while it runs tasks;
  // it parks in `driver` (unless a background driver thread holds it).
  CurrentThread(RuntimeShared* runtime, const RuntimeConfig& config, const LevelTable& levels,
                OwnedTasks& owned, std::shared_ptr<Driver> driver);
  CurrentThread(const CurrentThread&) = delete;
  CurrentThread& operator=(const CurrentThread&) = delete;

  void schedule(TaskHeader* task, bool is_yield) noexcept override;
  // Runs fn; throws std::logic_error on the thread with the core (it runs every task and
  // cannot be handed over).
  void block_in_place(const std::function<void()>& fn);

  // --- The core (for Runtime::block_on) ---
  // Claims the core for the calling thread; false if another thread has it or the runtime
  // is shut down.
  bool try_take_core() noexcept;
  // Runs tasks until `root_woken` is set (returns true) or the runtime shuts down (returns
  // false: the caller must release the core and wait for its root alone). Meanwhile the
  // thread counts as one of the runtime's own (a shutdown started by a task runs on a
  // detached thread, which takes the core once this thread gives it back). `root_woken` is
  // the RootWaker's flag: set with release ordering by its wake(), consumed here by
  // exchange(false, acquire), which pairs with it.
  // `slot` (holding the runtime's driver) is the block_on call's: tasks are polled with it.
  bool run_until(std::atomic<bool>& root_woken, ReactorSlot& slot);
  // Gives the core back and wakes the threads waiting for it. After a shutdown began, the
  // releasing thread first drops what is left in the local queue (the shutdown may have
  // given up waiting for the core: nobody else would).
  void release_core() noexcept;
  // A block_on thread without the core parks on its own `parker` until its root is woken
  // (returns false) or it could claim the core (returns true). The thread with the core is
  // the one that parks in the driver.
  bool wait_for_root(std::atomic<bool>& root_woken, ThreadParker& parker);
  // True if a task waits to be run (in any queue). For a paused clock, which may jump only
  // when no task is runnable.
  bool has_runnable() const noexcept;
  // The parker the thread with the core parks on: root wakers unpark it too. Shared with them,
  // since a waker may outlive the runtime.
  const std::shared_ptr<ThreadParker>& core_parker() const noexcept { return parker_; }

  // --- Shutdown steps (runtime/shared.cpp runs them in order) ---
  // Refuses remote schedules and takes the core for the shutdown (waiting for the current
  // poll at most until `deadline`). Returns 1 if its thread was left inside a poll, else 0.
  std::size_t close_and_stop(std::optional<std::chrono::steady_clock::time_point> deadline);
  // Drops every queued notification; the local queue only if the shutdown has the core (else
  // its thread drops it when it gives the core back).
  void drain_queues() noexcept;
  // Adds this scheduler's counters (one "worker": the thread with the core) to `m`.
  void fill_metrics(RuntimeMetrics& m);

 private:
  bool is_shutdown() const noexcept { return shutdown_.load(std::memory_order_acquire); }
  bool holds_core() const noexcept {
    return core_thread_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  // The thread with the core's own queues as pick_task sees them.
  struct OwnQueues;
  TaskHeader* pop_local(std::uint16_t channel) noexcept;
  // Queues `t` in the local FIFO of its channel (the caller counts it in its level).
  void push_local(TaskHeader* t) noexcept;
  // The next task by level and channel (scheduler/picker.hpp), or null.
  TaskHeader* next_task() noexcept;
  // Drops every notification in the local queue and refuses later local schedules. Only
  // by the thread with the core.
  void close_local() noexcept;
  // Runs up to event_interval tasks; false when there was none. With more than one level,
  // tasks that yielded (in `deferred`) rejoin their channels before each pick, so that the
  // choice of level sees them.
  bool run_batch(ReactorSlot& slot, DeferredWakes& deferred);

  RuntimeShared* const runtime_;
  const RuntimeConfig& config_;
  const LevelTable& levels_;
  const std::shared_ptr<Driver> driver_;
  // The inject and EDF queues, level counts, yield flag and channel counters (poller 0).
  RunQueues queues_;
  // Schedules from the thread with the core, one per channel; only it touches them (the
  // core_taken_ acquire/release pair hands them over, with tick_, cursor_, local_closed_).
  std::vector<IntrusiveFifo<TaskHeader, &TaskHeader::queue_next>> local_;
  std::uint32_t tick_ = 0;
  LevelCursor cursor_;
  // Set by the shutdown's drain: later local schedules drop their notification at once.
  bool local_closed_ = false;
  // The thread with the core parks here; remote schedules unpark it. Shared with the root
  // wakers of block_on calls, which may outlive the runtime.
  std::shared_ptr<ThreadParker> parker_ = std::make_shared<ThreadParker>();
  // Exchange(true, acquire) by the thread that claims the core; store(false, release) when
  // it gives it back (under waiters_mutex_, see release_core).
  std::atomic<bool> core_taken_{false};
  // The thread with the core (schedule's local/remote choice); written by it (relaxed: each
  // thread only compares it with itself).
  std::atomic<std::thread::id> core_thread_{};
  // Set once by close_and_stop (release) before it unparks the core's thread; read (acquire)
  // by its loop and by try_take_core / wait_for_root, which then no longer claim the core.
  std::atomic<bool> shutdown_{false};
  // True once close_and_stop holds the core (it keeps it); touched only by the shutdown.
  bool shutdown_holds_core_ = false;
  // The parkers of block_on threads in wait_for_root, and the shutdown waiting on
  // core_released_: release_core wakes both.
  std::mutex waiters_mutex_;
  std::condition_variable core_released_;
  std::vector<ThreadParker*> waiters_;  // guarded by waiters_mutex_
  // Counters: written by the core's thread, read by metrics() (relaxed); local_len_ (the
  // tasks in all local FIFOs) also by has_runnable (relaxed, ordered by the time driver's
  // jump mutex; see there).
  std::atomic<std::uint64_t> polls_{0};
  std::atomic<std::uint64_t> parks_{0};
  std::atomic<std::size_t> local_len_{0};
  // What the thread with the core does (WorkerMetrics::state; kParked while no thread holds
  // the core): stored by that thread (relaxed) as it takes the core, parks and gives the core
  // back, and by the driver while it parks there; read by metrics() (relaxed).
  std::atomic<WorkerState> state_{WorkerState::kParked};
};

}  // namespace spool::detail
