#include "scheduler/multi_thread/multi_thread.hpp"

#include <algorithm>

#include "context/budget.hpp"
#include "context/current.hpp"
#include "context/deferred.hpp"
#include "context/enter.hpp"
#include "driver/io/thread_ring.hpp"
#include "driver/thread_driver_ref.hpp"
#include "scheduler/multi_thread/worker_context.hpp"
#include "scheduler/picker.hpp"
#include "sync/thread.hpp"
#include "task/harness.hpp"

namespace spool::detail {

constinit thread_local WorkerContext* current_worker = nullptr;

namespace {

// Tasks polled in a row from the LIFO slot (after the task that filled it) before the
// slot's task goes to the back of the queue, so that two tasks waking each other cannot
// starve the queue. (tokio allows 3; 2 measured the same on W5 and W6.)
constexpr int kMaxLifoPolls = 2;

}  // namespace

std::size_t MultiThread::num_workers(const RuntimeConfig& config) noexcept {
  return config.worker_threads ? config.worker_threads
                               : std::max(1u, std::thread::hardware_concurrency());
}

MultiThread::MultiThread(RuntimeShared* runtime, const RuntimeConfig& config,
                         const LevelTable& levels, OwnedTasks& owned, BlockingPool& blocking,
                         std::shared_ptr<Driver> driver)
    : Scheduler(owned),
      runtime_(runtime),
      config_(config),
      event_interval_(config.event_interval),
      global_queue_interval_(config.global_queue_interval),
      lifo_slot_(config.lifo_slot),
      levels_(levels),
      num_channels_(levels.num_channels()),
      has_levels_(num_channels_ > 1 || levels.any_earliest_deadline_first()),
      blocking_(blocking),
      driver_(std::move(driver)),
      num_workers_(static_cast<std::uint32_t>(num_workers(config))),
      queues_(levels, num_workers_),
      idle_(num_workers_) {
  // A join's pop fences for nothing, a steal with a system call (fork_deque.hpp), where the
  // system can.
  const bool asymmetric_fences = enable_asymmetric_fences();
  for (std::uint32_t i = 0; i < num_workers_; ++i) {
    workers_.push_back(
        std::make_unique<WorkerShared>(num_channels_, asymmetric_fences, runtime_, has_levels_));
    auto core = std::make_unique<Core>(levels_);
    core->index = i;
    core->queues = workers_.back()->queues.get();
    core->rng = (config_.seed ^ (0x9e3779b97f4a7c15ull * (i + 1))) | 1;
    cores_.push_back(std::move(core));
  }
  // A block_on or background thread left the driver: a parked worker takes it over (it
  // finds no work and parks again, in the driver).
  driver_->set_hand_over([this] { hand_driver_over(); });
}

// The runtime joins (or, past a shutdown deadline, detaches) every thread before it
// destroys the scheduler.
MultiThread::~MultiThread() = default;

void MultiThread::start(const std::weak_ptr<void>& owner) {
  // A core whose thread never started has nothing to wait for at shutdown.
  core_left_.assign(num_workers_, true);
  threads_.reserve(num_workers_);
  for (std::uint32_t i = 0; i < num_workers_; ++i) {
    Core* core = cores_[i].get();
    std::lock_guard lock(exit_mutex_);  // the thread's exit takes it too
    threads_.push_back(start_thread(
        config_.thread_name, [this, core, pin = owner.lock()] { worker_thread_main(core); }));
    ++running_;
    core_left_[i] = false;
  }
}

void MultiThread::worker_thread_main(Core* core) {
  RuntimeThreadScope own_thread(runtime_);
  if (config_.on_thread_start) config_.on_thread_start();
  run_worker(core);
  if (config_.on_thread_stop) config_.on_thread_stop();
}

void MultiThread::run_worker(Core* core) {
  EnterGuard executor(kWorkerExecutor);
  ReactorSlot slot;
  slot.install(driver_);
  TimeDriver::set_thread_shard(core->index);  // timers armed here go to this worker's wheel
  ThreadDriverRef timers_ref(driver_);        // and count their references here
  // HighestFirst with more than one level: the tasks polled here honour yield requests.
  YieldRequestScope yield_requests(
      queues_.yields_on_request() ? &queues_.yield(core->index).requested : nullptr);
  WorkerContext ctx{this, core, &slot};
  WorkerContext* saved = std::exchange(current_worker, &ctx);
  ForkDeque* const saved_forks = std::exchange(this_thread_forks, &workers_[core->index]->forks);
  const Scheduler* const saved_scheduler = std::exchange(this_thread_scheduler, this);
  DeferredWakes deferred;
  {
    DeferredWakesScope defer_here(&deferred);
    // This thread's own ring for files, on io_uring (made by the first operation that wants
    // it); ended here, while the thread is still the worker: the tasks whose operations it
    // cancels wake into this core's queue (or the inject queue, the core gone).
    ThreadRingScope ring(driver_->io());
    if (has_levels_) {
      worker_loop(Picker<true>(queues_), deferred);
    } else {
      worker_loop(Picker<false>(queues_), deferred);
    }
  }
  // Into the core's queue (drained at shutdown), or the inject queue when block_in_place
  // took the core (dropped there if shut down).
  wake_deferred(deferred);
  current_worker = saved;
  this_thread_forks = saved_forks;
  this_thread_scheduler = saved_scheduler;
  {
    std::lock_guard lock(exit_mutex_);
    --running_;
    if (ctx.core != nullptr) {
      core_left_[ctx.core->index] = true;
      // Left after the shutdown's drain (it gave up waiting, shutdown_timeout): nobody else
      // drains this core's queues.
      if (drained_) drain_core(*ctx.core);
    }
    exit_cv_.notify_all();
  }
}

template <class Picker>
void MultiThread::worker_loop(Picker picker, DeferredWakes& deferred) {
  WorkerContext& ctx = *current_worker;
  while (ctx.core != nullptr && !is_shutdown()) {
    Core& c = *ctx.core;
    // Maintenance, every event_interval: tasks that yielded rejoin the queue, and the
    // driver is polled (due timers fire even while every worker is busy).
    if (++c.tick % event_interval_ == 0) {
      requeue_deferred(c, deferred);
      driver_->maintain();
    }
    if (picker.picks_by_level()) {
      requeue_deferred(c, deferred);
      picker.before_pick(c.index);
    }
    if (TaskHeader* t = next_task(picker, c)) {
      run_task_on(picker, t);
      if (Picker::kMaintainAfterEachPoll) driver_->maintain_if_due();
      continue;
    }
    if (reap_this_thread_ring()) continue;          // this thread's files answered
    if (requeue_deferred(c, deferred)) continue;    // only yielded tasks are left: run them
    if (c.is_searching && steal_fork(c)) continue;  // a join's child, now a task in the slot
    if (busy_poll(c)) continue;
    park(c);
  }
}

bool MultiThread::requeue_deferred(Core& core, DeferredWakes& deferred) {
  // The tasks go back into this worker's queue (in one push without levels); a parked
  // worker is told once, after the last.
  NotifyBatch batch(core, /*tell_first=*/false);
  const bool any = wake_deferred(deferred);
  if (batch.end()) notify_parked(Idle::Published::kLocalQueue);
  return any;
}

template <class Picker>
void MultiThread::run_task_on(Picker picker, TaskHeader* t) {
  WorkerContext& ctx = *current_worker;
  transition_from_searching(*ctx.core);
  int lifo_polls = 0;
  for (;;) {
    Core& core = *ctx.core;
    WorkerShared& w = *workers_[core.index];
    if (!picker.may_poll_now(core.index, t, [&](TaskHeader* t) {
          core.queues[t->channel].push_back_or_overflow(t, queues_.inject(t->channel), drop_ref);
        })) {
      return;
    }
    w.polls.store(w.polls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    picker.poll(core.index, t, ctx.slot, [&] { return ctx.core != nullptr; });
    submit_this_thread_ring();        // the file operations the poll queued start now
    if (ctx.core == nullptr) return;  // block_in_place took the core during the poll
    t = std::exchange(core.lifo, nullptr);
    if (t == nullptr) return;
    picker.before_pick(core.index);
    if (lifo_polls++ == kMaxLifoPolls || picker.higher_level_waits(t)) {
      // The LIFO task has had its turns (or a higher level's task waits): put it behind the
      // queue so others get theirs. Into an empty queue it is this worker's very next task,
      // as if it had stayed in the slot: waking a parked worker to steal it would only move it.
      const std::uint16_t ch = picker.channel_of(t);
      LocalQueue<>& q = core.queues[ch];
      const bool others_waiting = !q.is_empty();
      picker.count(t, 1);
      q.push_back_or_overflow(t, queues_.inject(ch), drop_ref);
      if (others_waiting) notify_parked(Idle::Published::kLocalQueue);
      return;
    }
  }
}

struct MultiThread::OwnQueues {
  MultiThread& mt;
  Core& core;
  TaskHeader*& lifo_slot() noexcept { return core.lifo; }
  TaskHeader* pop_local(std::uint16_t ch) noexcept { return core.queues[ch].pop(); }
  TaskHeader* from_inject(std::uint16_t ch) { return mt.next_from_inject(core, ch); }
  TaskHeader* steal(std::uint16_t ch) { return mt.steal_work(core, ch); }
};

template <class Picker>
TaskHeader* MultiThread::next_task(Picker picker, Core& core) {
  OwnQueues own{*this, core};
  return picker.next(core.cursor, core.tick, global_queue_interval_, own);
}

}  // namespace spool::detail
