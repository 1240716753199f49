// The multi-thread work-stealing scheduler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "blocking/pool.hpp"
#include "context/deferred.hpp"
#include "driver/driver.hpp"
#include "driver/thread_parker.hpp"
#include "scheduler/levels.hpp"
#include "scheduler/multi_thread/idle.hpp"
#include "scheduler/multi_thread/local_queue.hpp"
#include "scheduler/picker.hpp"
#include "scheduler/run_queues.hpp"
#include "spool/detail/fork_deque.hpp"
#include "spool/detail/runtime_config.hpp"
#include "spool/metrics.hpp"
#include "task/harness.hpp"
#include "task/owned_tasks.hpp"
#include "task/scheduler_api.hpp"

namespace spool::detail {

class RuntimeShared;

// What a worker's ring does with a task it cannot queue (shut down): drops the queue's reference.
inline constexpr auto drop_ref = [](TaskHeader* t) noexcept { drop_task_refs(t); };

// A worker's state that moves with it: block_in_place hands a Core to a new thread.
// Touched only by the thread that holds it.
struct Core {
  explicit Core(const LevelTable& levels) : cursor(levels) {}
  std::uint32_t index;         // which worker (and local queues) this is
  LocalQueue<>* queues;        // that worker's local queues, one per channel
  std::uint32_t tick = 0;      // tasks run so far; drives the event/global intervals
  bool is_searching = false;   // counted in Idle's searching number
  TaskHeader* lifo = nullptr;  // the LIFO slot: a task woken or spawned by the running task
  std::uint64_t rng;           // xorshift state for picking steal victims
  // During a NotifyBatch: whether its first push still tells a worker at once, and whether
  // a push held its notification back.
  bool batching_notify = false;
  bool tell_first = false;
  bool notify_after_batch = false;
  LevelCursor cursor;  // where the worker stands in the levels and their channels
};

// Holds back the notifications of a core's local pushes for a batch of them: a push only
// notes that a parked worker should be told, and the batch's owner tells one at its end.
// A notification reads the shared idle word with an RMW; and a worker told at every push of
// a burst steals a few tasks, runs out and parks before the next one, at a futex wake each.
// With `tell_first`, the batch's first push tells one at once, so that another worker starts
// on a burst while the rest of it comes in. `hold` false: no batch (each push tells).
class NotifyBatch {
 public:
  NotifyBatch(Core& core, bool tell_first, bool hold = true) noexcept : core_(core) {
    core_.batching_notify = hold;
    core_.tell_first = hold && tell_first;
  }
  ~NotifyBatch() { (void)end(); }
  NotifyBatch(const NotifyBatch&) = delete;
  NotifyBatch& operator=(const NotifyBatch&) = delete;
  // Ends the batch: true if a push held its notification back.
  bool end() noexcept {
    core_.batching_notify = false;
    return std::exchange(core_.notify_after_batch, false);
  }

 private:
  Core& core_;
};

// Per-worker state that other threads touch.
struct alignas(64) WorkerShared {
  // `forks`: its fork deque's arguments (see ForkDeque).
  WorkerShared(std::uint16_t num_channels, bool asymmetric_fences, RuntimeShared* runtime,
               bool levels)
      : queues(new LocalQueue<>[num_channels]), forks(asymmetric_fences, runtime, levels) {}
  const std::unique_ptr<LocalQueue<>[]> queues;  // one per channel (scheduler/levels.hpp)
  ThreadParker parker;
  // Counters: written by the core's thread (relaxed increments), read by metrics().
  std::atomic<std::uint64_t> polls{0};
  std::atomic<std::uint64_t> steals{0};
  std::atomic<std::uint64_t> parks{0};
  // What the core's thread does (WorkerMetrics::state): stored by it (relaxed) around its
  // parks, and by the driver while it parks there; read by metrics() (relaxed).
  std::atomic<WorkerState> state{WorkerState::kRunning};
  // The children of spool::join waiting for the joins of the polls in progress on the
  // core's thread (include/spool/fork.hpp); other workers steal them.
  ForkDeque forks;
};

// The multi-thread scheduler. Owned by its runtime (runtime/shared.hpp), which hands it the
// configuration, the owned-task list (release) and the blocking pool (block_in_place). The
// run queues and the picking order are RunQueues' and pick_task's; the worker here adds its
// local rings and LIFO slot, stealing, parking, the driver hand-over and maintenance.
class MultiThread final : public Scheduler {
 public:
  // The workers park in `driver` (one at a time; see Driver) and poll tasks with it in
  // their reactor slots.
  MultiThread(RuntimeShared* runtime, const RuntimeConfig& config, const LevelTable& levels,
              OwnedTasks& owned, BlockingPool& blocking, std::shared_ptr<Driver> driver);
  // How many workers `config` asks for.
  static std::size_t num_workers(const RuntimeConfig& config) noexcept;
  ~MultiThread();
  MultiThread(const MultiThread&) = delete;
  MultiThread& operator=(const MultiThread&) = delete;

  // Starts the worker threads; each keeps `owner` (the runtime) alive while it runs. Throws
  // std::system_error if one cannot start: the ones that did keep running until
  // close_and_stop, which the caller must then call.
  void start(const std::weak_ptr<void>& owner);
  void schedule(TaskHeader* task, bool is_yield) noexcept override;
  // On a worker holding its core, without levels: one push for them all.
  void schedule_yielded(std::span<TaskHeader* const> tasks) noexcept override;
  // fork_push's side here (notify_fork_thieves): a push into an empty deque wakes a parked
  // worker to steal.
  void fork_pushed_into_empty() noexcept { notify_parked(Idle::Published::kLocalQueue); }
  // block_in_place on a thread of this runtime: a worker hands its core to a new thread.
  void block_in_place(const std::function<void()>& fn);
  // Runs `fn`, which blocks: on a worker whose core holds tasks (LIFO slot, queues, fork
  // deque), after handing the core over as block_in_place does — `fn` may wait for one of
  // them. Nobody else can add to an idle core, so an empty one stays with its thread.
  void block_off_core(const std::function<void()>& fn);

  // Shutdown steps (runtime/shared.cpp runs them in order). close_and_stop closes the
  // inject queue and stops the worker threads (joins them, waiting at most until
  // `deadline` when given; a thread stuck in a poll then is detached) and returns how many
  // were left so. drain_queues drops every queued notification of the cores whose threads left.
  std::size_t close_and_stop(std::optional<std::chrono::steady_clock::time_point> deadline);
  void drain_queues() noexcept;
  void fill_metrics(RuntimeMetrics& m);

 private:
  // The core's own queues as pick_task sees them (multi_thread.cpp).
  struct OwnQueues;

  // --- The worker (multi_thread.cpp) ---
  // The worker and the schedule paths below take a Picker (scheduler/picker.hpp), chosen
  // once per worker loop or schedule by has_levels_: they ask it every question of levels.
  // Runs the worker loop with `core` on the calling thread until shutdown, or until
  // block_in_place takes the core away.
  void run_worker(Core* core);
  template <class Picker>
  void worker_loop(Picker picker, DeferredWakes& deferred);

  // Polls `task`, then the tasks its polls put in the LIFO slot, a few in a row.
  template <class Picker>
  void run_task_on(Picker picker, TaskHeader* task);
  // The next task for `core`, or null.
  template <class Picker>
  [[gnu::always_inline]] inline TaskHeader* next_task(Picker picker, Core& core);
  // Drains the deferred-wake list into this worker's queue with one notification for the
  // lot; true if there was anything.
  bool requeue_deferred(Core& core, DeferredWakes& deferred);
  void worker_thread_main(Core* core);

  // --- Stealing (steal.cpp) ---
  // Takes a share of `channel`'s inject queue: one task to run, the rest into the core's ring.
  TaskHeader* next_from_inject(Core& core, std::uint16_t channel);
  // From another worker's ring of `channel`, else the inject queue; becomes a searcher first.
  TaskHeader* steal_work(Core& core, std::uint16_t channel);
  // A searching worker with nothing else to run takes the oldest child from another
  // worker's fork deque and spawns it as a task here (into the LIFO slot); true if it did.
  bool steal_fork(Core& core);
  // Before the core is handed over (block_in_place): every child in its fork deque becomes
  // a task, queued on the core (the joins waiting for them then count them as stolen).
  void spill_forks(Core& core) noexcept;

  // --- Parking and waking (park.cpp) ---
  void park(Core& core);
  // Wakes a parked worker for a task published `where`, unless a worker is searching;
  // true if it woke one.
  bool notify_parked(Idle::Published where) noexcept {
    auto w = idle_.worker_to_notify(where);
    if (!w) return false;
    workers_[*w]->parker.unpark();
    return true;
  }
  // Wakes a parked worker to take the driver, which nobody holds now while timers wait.
  void hand_driver_over() noexcept;
  void transition_from_searching(Core& core) noexcept;
  // True if a task waits in some local queue or inject queue, or a child in a fork deque.
  bool work_pending() const noexcept;
  // Builder::busy_poll before parking: true if work came (a task in any queue, or the
  // shutdown).
  bool busy_poll(Core& core);
  // True if a task waits in one of w's local queues.
  bool has_local_work(const WorkerShared& w) const noexcept;

  // --- Scheduling (schedule.cpp) ---
  template <class Picker>
  void schedule_with(Picker picker, TaskHeader* task, bool is_yield) noexcept;
  // Queues a task of an EDF channel and tells a worker, as schedule_remote does.
  void push_edf(TaskHeader* task) noexcept;
  // schedule from a worker holding `core`: into its LIFO slot or its local queue.
  template <class Picker>
  void schedule_local(Picker picker, Core& core, TaskHeader* task, bool is_yield) noexcept;
  // Pushes onto the core's local queue of the task's channel and tells a parked worker.
  // (Not inlined into schedule, nor is schedule_remote below: their registers would burden
  // the path into the LIFO slot, the hot one: inlined, they cost W6 1.5%. Nor is a Picker
  // passed to them: each makes its own, which costs no argument register.)
  template <class Picker>
  [[gnu::noinline]] void push_local(Core& core, TaskHeader* task) noexcept;
  // After a push onto core's local queue: tells a parked worker, unless a searcher (core's
  // own) will find the task or the batch being requeued tells one at its end. False if no
  // worker was woken nor will be told.
  bool tell_of_local_push(Core& core) noexcept;
  // schedule from any other thread: into the inject queue of the task's channel.
  template <class Picker>
  [[gnu::noinline]] void schedule_remote(TaskHeader* task) noexcept;

  // --- Shutdown (stop_and_metrics.cpp) ---
  // Drops the notifications of a core's LIFO slot and local queue (its thread has left).
  void drain_core(Core& core) noexcept;
  bool is_shutdown() const noexcept { return shutdown_.load(std::memory_order_acquire); }

  RuntimeShared* const runtime_;  // what its threads are marked as belonging to
  const RuntimeConfig& config_;
  // The settings every tick reads, copied next to the scheduler's own data.
  const std::uint32_t event_interval_;
  const std::uint32_t global_queue_interval_;
  const bool lifo_slot_;
  const LevelTable& levels_;
  const std::uint16_t num_channels_;
  const bool has_levels_;  // RunQueues::has_levels: which Picker the hot paths take
  BlockingPool& blocking_;
  const std::shared_ptr<Driver> driver_;
  const std::uint32_t num_workers_;
  std::vector<std::unique_ptr<WorkerShared>> workers_;
  std::vector<std::unique_ptr<Core>> cores_;
  RunQueues queues_;
  // On cache lines of its own: the idle word is written by every search transition, while
  // the fields above are read by every worker on every tick.
  alignas(64) Idle idle_;
  std::vector<std::thread> threads_;
  // Set once by close_and_stop (release); read by the workers in their loop and park
  // (acquire), so that a worker that sees it also sees the closed inject queue. On a cache
  // line of its own: every worker reads it every tick, and the idle word and the inject
  // queue nearby are written all the time.
  alignas(64) std::atomic<bool> shutdown_{false};
  // Threads inside run_worker: each worker thread, and each pool thread that took a core over
  // from block_in_place (its worker thread stays counted until it too leaves, maybe still
  // inside the poll that blocked). Incremented by start and by block_in_place's hand-off,
  // decremented by each thread as it leaves, under exit_mutex_; shutdown waits for zero.
  std::mutex exit_mutex_;
  std::condition_variable exit_cv_;
  std::uint32_t running_ = 0;    // guarded by exit_mutex_
  std::vector<bool> core_left_;  // guarded by exit_mutex_: core's loop ended
  bool drained_ = false;         // guarded by exit_mutex_: drain_queues ran
};

}  // namespace spool::detail
