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
#include "scheduler/edf_queue.hpp"
#include "scheduler/inject_queue.hpp"
#include "scheduler/level_poll.hpp"
#include "scheduler/levels.hpp"
#include "scheduler/multi_thread/fork_deque.hpp"
#include "scheduler/multi_thread/idle.hpp"
#include "scheduler/multi_thread/local_queue.hpp"
#include "scheduler/pick.hpp"
#include "spool/detail/runtime_config.hpp"
#include "spool/metrics.hpp"
#include "task/owned_tasks.hpp"
#include "task/scheduler_api.hpp"

namespace spool::detail {

class RuntimeShared;
struct ForkSite;

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
  // While requeue_deferred pushes a batch: pushes only note that a worker should be told.
  bool batching_notify = false;
  bool notify_after_batch = false;
  LevelCursor cursor;  // where the worker stands in the levels and their channels
};

// Per-worker state that other threads touch.
struct alignas(64) WorkerShared {
  explicit WorkerShared(std::uint16_t num_channels)
      : queues(new LocalQueue<>[num_channels]), channels(new ChannelCounters[num_channels]) {}
  const std::unique_ptr<LocalQueue<>[]> queues;  // one per channel (scheduler/levels.hpp)
  ThreadParker parker;
  // Counters: written by the core holder (relaxed increments), read by metrics().
  std::atomic<std::uint64_t> polls{0};
  std::atomic<std::uint64_t> steals{0};
  std::atomic<std::uint64_t> parks{0};
  const std::unique_ptr<ChannelCounters[]> channels;  // more than one channel only
  YieldState yield;                                   // more than one level only
  // The children of spool::join waiting for the joins of the polls in progress on the
  // core's holder (include/spool/fork.hpp); other workers steal them.
  ForkDeque forks;
};

// An inject queue on cache lines of its own: one per channel.
struct alignas(64) PaddedInject {
  InjectQueue queue;
};

// A count of one level's tasks in run queues (more than one level only), on a cache line of
// its own. Incremented before a task is pushed into a local or inject queue, decremented
// after one is taken out to run (seq_cst, like the queues' own length words: a worker that
// finds it zero skips the level; a stale non-zero costs a look in empty queues).
struct alignas(64) LevelCount {
  std::atomic<std::int64_t> queued{0};
};

// The multi-thread scheduler. Owned by its runtime (runtime/shared.hpp), which hands it the
// configuration, the owned-task list (release) and the blocking pool (block_in_place).
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
  // If the calling thread is a worker holding its core: sets `site` (its deque, runtime and
  // channel) and returns true. See spool::detail::fork_site.
  static bool fork_site_here(ForkSite& site) noexcept;
  // fork_push's side here: a push into an empty deque wakes a parked worker to steal.
  void fork_pushed_into_empty() noexcept { notify_parked(Idle::Published::kLocalQueue); }
  friend ForkItem* fork_pop(ForkDeque& deque) noexcept;
  bool release(TaskHeader* task) noexcept override { return owned_.remove(task); }
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
  // Runs the worker loop with `core` on the calling thread until shutdown, or until
  // block_in_place takes the core away.
  void run_worker(Core* core);
  // The hot paths below come in two builds, chosen once per worker loop or schedule:
  // kLevels is has_levels_, so that a runtime without levels tests none of their cases.
  template <bool kLevels>
  void worker_loop(DeferredWakes& deferred);
  template <bool kLevels>
  void run_task_on(TaskHeader* task);
  // The next task for `core`: from the highest level with work (HighestFirst) or the level
  // whose slice runs (RoundRobin), and within it from its channels in turn; from the core's
  // LIFO slot and queues, the inject queues, or stolen from other workers. Null: none found.
  // (Forced inline, with next_in_level and next_in_channel: in a runtime without levels the
  // picking order degenerates to one channel, and must cost what it did before levels.)
  template <bool kLevels>
  [[gnu::always_inline]] inline TaskHeader* next_task(Core& core);
  [[gnu::always_inline]] inline TaskHeader* next_in_level(Core& core, std::uint16_t level);
  // From `channel`'s LIFO slot, local queue or inject queue.
  template <bool kLevels>
  [[gnu::always_inline]] inline TaskHeader* next_in_channel(Core& core, std::uint16_t channel);
  TaskHeader* next_from_inject(Core& core, std::uint16_t channel);
  TaskHeader* steal_work(Core& core, std::uint16_t channel);
  // A searching worker with nothing else to run takes the oldest child from another
  // worker's fork deque and spawns it as a task here (into the LIFO slot); true if it did.
  bool steal_fork(Core& core);
  // Before the core is handed over (block_in_place): every child in its fork deque becomes
  // a task, queued on the core (the joins waiting for them then count them as stolen).
  void spill_forks(Core& core) noexcept;
  // Whether `level` may have a runnable task: in queues (its count) or `core`'s LIFO slot.
  bool level_may_have_work(const Core& core, std::uint16_t level) const noexcept;
  // HighestFirst: whether the LIFO task `t` must wait because a higher level has work.
  bool higher_level_waits(const TaskHeader* t) const noexcept {
    return num_levels_ > 1 && !round_robin_ && higher_level_queued(t);
  }
  bool higher_level_queued(const TaskHeader* t) const noexcept;
  // The channel `t` is queued in. Without levels every task is on channel 0, and the builds
  // for that case never read the header's field: that load, from the header of a task just
  // spawned, before its queue push, cost W6 (chained_spawn) 3%.
  template <bool kLevels>
  static std::uint16_t channel_of(const TaskHeader* t) noexcept {
    return kLevels ? t->channel : 0;
  }
  // Counts a task into (+1) or out of (-1) its level's queued number (more than one level).
  void count_queued(const TaskHeader* t, std::int64_t delta) noexcept {
    if (num_levels_ > 1) add_queued(t, delta);
  }
  void add_queued(const TaskHeader* t, std::int64_t delta) noexcept;
  // HighestFirst: asks the worker running the lowest-level task below `level` to yield.
  void request_yield(std::uint16_t level) noexcept;
  // Whether `channel` is earliest-deadline-first: its tasks live in edf_[channel] only.
  bool is_edf(std::uint16_t channel) const noexcept {
    return edf_ != nullptr && levels_.earliest_deadline_first(channel);
  }
  // Queues a task of an EDF channel and tells a worker, as schedule_remote does.
  void push_edf(TaskHeader* task) noexcept;
  // Queues a task of an EDF channel, counted in its level; false once the queue is closed (the
  // task's queue reference is then dropped).
  bool queue_edf(TaskHeader* task) noexcept;
  // The earliest-deadline task of EDF `channel`, or null.
  TaskHeader* pop_edf(std::uint16_t channel) noexcept;
  void park(Core& core);
  // Wakes a parked worker for a task published `where`, unless a worker is searching;
  // true if it woke one.
  bool notify_parked(Idle::Published where) noexcept;
  // Wakes a parked worker to take the driver, which nobody holds now while timers wait.
  void hand_driver_over() noexcept;
  // Drains the deferred-wake list into this worker's queue with one notification for the
  // lot; true if there was anything.
  bool requeue_deferred(Core& core, DeferredWakes& deferred);
  // True if a task waits in some local queue or inject queue, or a child in a fork deque.
  bool work_pending() const noexcept;
  // Builder::busy_poll before parking: true if work came (a task in any queue, or the
  // shutdown).
  bool busy_poll(Core& core);
  // True if a task waits in one of w's local queues.
  bool has_local_work(const WorkerShared& w) const noexcept;
  // With more than one channel: whether `t`, woken by the task running on worker `w`, may
  // take w's LIFO slot, where no other worker can take it and no channel turn applies. Only a
  // task of a level with one channel (else one channel's chain of wakes would take three
  // turns to each sibling's one), of the running task's level (a higher one goes where idle
  // workers can take it, a lower one must not jump ahead), and, under HighestFirst, of the
  // lowest level (a higher one could wait in the slot while another worker runs lower work).
  bool lifo_allowed(const WorkerShared& w, const TaskHeader* t) const noexcept {
    const std::uint16_t level = levels_.level_of(t->channel);
    if (levels_.end_channel(level) - levels_.first_channel(level) != 1) return false;
    if (num_levels_ == 1) return true;
    if (level != w.yield.running_level.load(std::memory_order_relaxed)) return false;
    return round_robin_ || level + 1 == num_levels_;
  }
  // HighestFirst, before a poll of `t` on worker `w`: publishes the level it runs, then looks
  // again for higher-level work queued since the pick; if there is some, puts `t` back into
  // its ring and returns false (see YieldState::running_level).
  bool may_poll_now(Core& core, WorkerShared& w, TaskHeader* t) noexcept;
  // schedule, built for kLevels == has_levels_: the EDF queue of the task's channel, else
  // schedule_local on a worker of this runtime that holds a core, else schedule_remote.
  template <bool kLevels>
  void schedule_as(TaskHeader* task, bool is_yield) noexcept;
  // schedule from a worker holding `core`: into its LIFO slot or its local queue.
  template <bool kLevels>
  void schedule_local(Core& core, TaskHeader* task, bool is_yield) noexcept;
  // Pushes onto the core's local queue of the task's channel and tells a parked worker.
  // (Not inlined into schedule, nor is schedule_remote below: their registers would burden
  // the path into the LIFO slot, the hot one: inlined, they cost W6 1.5%.)
  template <bool kLevels>
  [[gnu::noinline]] void push_local(Core& core, TaskHeader* task) noexcept;
  // schedule from any other thread: into the inject queue of the task's channel.
  template <bool kLevels>
  [[gnu::noinline]] void schedule_remote(TaskHeader* task) noexcept;
  void transition_from_searching(Core& core) noexcept;
  void worker_thread_main(Core* core);
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
  const std::uint16_t num_levels_;
  const std::uint16_t num_channels_;
  const bool round_robin_;
  // More than one channel, or an earliest-deadline-first one: only then are the picking
  // order, the per-level counts, the EDF queues and the per-channel counters in play.
  const bool has_levels_;
  OwnedTasks& owned_;
  BlockingPool& blocking_;
  const std::shared_ptr<Driver> driver_;
  const std::uint32_t num_workers_;
  std::vector<std::unique_ptr<WorkerShared>> workers_;
  std::vector<std::unique_ptr<Core>> cores_;
  const std::unique_ptr<PaddedInject[]> injects_;  // one per channel, each on its own lines
  // Per channel: polls that ended after block_in_place had taken their worker's core (its
  // counters are the new holder's then). Any thread adds (ChannelCounters::record_shared).
  const std::unique_ptr<ChannelCounters[]> handed_off_polls_;
  // One per channel if any channel is earliest-deadline-first (only those are used), else null.
  const std::unique_ptr<EdfQueue[]> edf_;
  const std::unique_ptr<LevelCount[]> queued_;  // one per level (more than one level)
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
