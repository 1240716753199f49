#include "scheduler/multi_thread/multi_thread.hpp"

#include <algorithm>

#include "context/current.hpp"
#include "context/deferred.hpp"
#include "context/enter.hpp"
#include "scheduler/pick.hpp"
#include "sync/thread.hpp"
#include "task/harness.hpp"

namespace spool::detail {

namespace {

// A runtime worker's view of itself: which scheduler, and the core it holds (null once
// block_in_place handed the core away).
struct WorkerContext {
  MultiThread* scheduler;
  Core* core;
  ReactorSlot* slot;  // holds the runtime's driver: tasks polled here may park in it
};
thread_local WorkerContext* current_worker = nullptr;

// Tasks polled in a row from the LIFO slot (after the task that filled it) before the
// slot's task goes to the back of the queue, so that two tasks waking each other cannot
// starve the queue. (tokio allows 3; 2 measured the same on W5 and W6.)
constexpr int kMaxLifoPolls = 2;

std::uint64_t next_random(std::uint64_t& s) noexcept {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

auto drop_ref = [](TaskHeader* t) noexcept { drop_task_refs(t); };

}  // namespace

std::size_t MultiThread::num_workers(const RuntimeConfig& config) noexcept {
  return config.worker_threads ? config.worker_threads
                               : std::max(1u, std::thread::hardware_concurrency());
}

MultiThread::MultiThread(RuntimeShared* runtime, const RuntimeConfig& config, OwnedTasks& owned,
                         BlockingPool& blocking, std::shared_ptr<Driver> driver)
    : runtime_(runtime),
      config_(config),
      event_interval_(config.event_interval),
      global_queue_interval_(config.global_queue_interval),
      lifo_slot_(config.lifo_slot),
      owned_(owned),
      blocking_(blocking),
      driver_(std::move(driver)),
      num_workers_(static_cast<std::uint32_t>(num_workers(config))),
      idle_(num_workers_) {
  for (std::uint32_t i = 0; i < num_workers_; ++i) {
    workers_.push_back(std::make_unique<WorkerShared>());
    auto core = std::make_unique<Core>();
    core->index = i;
    core->rng = (config_.seed ^ (0x9e3779b97f4a7c15ull * (i + 1))) | 1;
    cores_.push_back(std::move(core));
  }
  // A block_on or background thread left the driver: a parked worker takes it over (it
  // finds no work and parks again, in the driver).
  driver_->set_handoff([this] { hand_driver_over(); });
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
  EnterGuard executor("a spool runtime worker thread");
  ReactorSlot slot;
  slot.install(driver_);
  TimeDriver::set_thread_shard(core->index);  // timers armed here go to this worker's wheel
  WorkerContext ctx{this, core, &slot};
  WorkerContext* saved = std::exchange(current_worker, &ctx);
  DeferredWakes deferred;
  {
    DeferredWakesScope defer_here(&deferred);
    while (ctx.core != nullptr && !is_shutdown()) {
      Core& c = *ctx.core;
      // Maintenance, every event_interval: tasks that yielded rejoin the queue, and the
      // driver is polled (due timers fire even while every worker is busy).
      if (++c.tick % event_interval_ == 0) {
        requeue_deferred(c, deferred);
        driver_->maintain();
      }
      TaskHeader* t = next_task(c);
      if (t == nullptr) t = steal_work(c);
      if (t != nullptr) {
        run_task_on(t);
        continue;
      }
      if (requeue_deferred(c, deferred)) continue;  // only yielded tasks are left: run them
      park(c);
    }
  }
  // Into the core's queue (drained at shutdown), or the inject queue when block_in_place
  // took the core (dropped there if shut down).
  wake_deferred(deferred);
  current_worker = saved;
  {
    std::lock_guard lock(exit_mutex_);
    if (ctx.core != nullptr) {  // a core handed away keeps counting as running
      --running_;
      core_left_[ctx.core->index] = true;
      // Left after the shutdown's drain (it gave up waiting, shutdown_timeout): nobody else
      // drains this core's queues.
      if (drained_) drain_core(*ctx.core);
    }
    exit_cv_.notify_all();
  }
}

bool MultiThread::requeue_deferred(Core& core, DeferredWakes& deferred) {
  // The tasks go back into this worker's queue one by one; a parked worker is told once,
  // after the last (a notification reads the shared idle word with an RMW).
  struct Batch {
    Core& core;
    explicit Batch(Core& c) : core(c) { core.batching_notify = true; }
    ~Batch() { core.batching_notify = false; }
  };
  bool any;
  {
    Batch batch(core);
    any = wake_deferred(deferred);
  }
  if (std::exchange(core.notify_after_batch, false)) notify_parked(Idle::Published::kLocalQueue);
  return any;
}

void MultiThread::run_task_on(TaskHeader* t) {
  WorkerContext& ctx = *current_worker;
  transition_from_searching(*ctx.core);
  int lifo_polls = 0;
  for (;;) {
    WorkerShared& w = *workers_[ctx.core->index];
    w.polls.store(w.polls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    run_task(t, ctx.slot);
    if (ctx.core == nullptr) return;  // block_in_place took the core during the poll
    t = std::exchange(ctx.core->lifo, nullptr);
    if (t == nullptr) return;
    if (lifo_polls++ == kMaxLifoPolls) {
      // The LIFO task has had its turns: put it behind the queue so others get theirs.
      // Into an empty queue it is this worker's very next task, as if it had stayed in
      // the slot: waking a parked worker to steal it would only move it.
      const bool others_waiting = !w.queue.is_empty();
      w.queue.push_back_or_overflow(t, inject_, drop_ref);
      if (others_waiting) notify_parked(Idle::Published::kLocalQueue);
      return;
    }
  }
}

TaskHeader* MultiThread::next_task(Core& core) {
  return pick_next_task(
      core.tick, global_queue_interval_, [&] { return inject_.pop(); },
      [&] {
        if (TaskHeader* t = std::exchange(core.lifo, nullptr)) return t;
        return workers_[core.index]->queue.pop();
      },
      [&] { return next_from_inject(core); });
}

// Takes a share of the inject queue: one task to run now and a batch for the local queue.
TaskHeader* MultiThread::next_from_inject(Core& core) {
  if (inject_.is_empty()) return nullptr;
  constexpr std::size_t kMaxBatch = 64;
  std::size_t share = std::min(kMaxBatch, inject_.len() / num_workers_ + 1);
  TaskHeader* batch[kMaxBatch];
  std::size_t n = inject_.pop_n(batch, share);
  if (n == 0) return nullptr;
  LocalQueue<>& q = workers_[core.index]->queue;
  for (std::size_t i = 1; i < n; ++i) q.push_back_or_overflow(batch[i], inject_, drop_ref);
  return batch[0];
}

TaskHeader* MultiThread::steal_work(Core& core) {
  if (!core.is_searching) {
    if (!idle_.transition_to_searching()) return nullptr;
    core.is_searching = true;
  }
  LocalQueue<>& mine = workers_[core.index]->queue;
  std::uint32_t start = static_cast<std::uint32_t>(next_random(core.rng) % num_workers_);
  for (std::uint32_t i = 0; i < num_workers_; ++i) {
    std::uint32_t victim = (start + i) % num_workers_;
    if (victim == core.index) continue;
    if (TaskHeader* t = workers_[victim]->queue.steal_into(mine)) {
      WorkerShared& w = *workers_[core.index];
      w.steals.store(w.steals.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return t;
    }
  }
  return next_from_inject(core);
}

void MultiThread::transition_from_searching(Core& core) noexcept {
  if (!core.is_searching) return;
  core.is_searching = false;
  // The last searcher found work: wake another worker to look for the rest, if there is
  // a rest. Pushers that saw this worker searching skipped their wake-up; their tasks are
  // visible here (the seq_cst pairing of the park re-check), and a task pushed after this
  // worker stopped searching is the pusher's to notify for.
  if (idle_.transition_from_searching() && work_pending()) {
    notify_parked(Idle::Published::kLocalQueue);  // (the stronger read of the two)
  }
}

void MultiThread::park(Core& core) {
  if (config_.on_thread_park) config_.on_thread_park();
  // The last searcher to park re-checks every queue: pushers skipped waking anyone
  // because it was searching.
  if (idle_.transition_to_parked(core.index, core.is_searching) && work_pending()) {
    notify_parked(Idle::Published::kLocalQueue);
  }
  core.is_searching = false;
  WorkerShared& w = *workers_[core.index];
  while (!is_shutdown()) {
    w.parks.store(w.parks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    // In the driver if no other worker holds it (then it waits for the next timer too).
    const bool drove = driver_->park_thread(w.parker);
    bool found_work = false;
    if (!idle_.is_parked(core.index)) {
      core.is_searching = true;  // a notify unparked us and counted us as searching
      found_work = true;
    } else if (core.lifo != nullptr || !w.queue.is_empty()) {
      // Timers fired here woke tasks into our queue. A notify that took us out of the list
      // since the check above counted us as searching: then we are.
      core.is_searching = !idle_.unpark_by_id(core.index);
      found_work = true;
    }
    if (!found_work) continue;
    // Leaving the driver for work while timers wait: hand it over (else the timers would
    // wait for a maintenance tick).
    if (drove && driver_->time().has_timers()) hand_driver_over();
    break;
  }
  if (is_shutdown()) idle_.unpark_by_id(core.index);
  if (config_.on_thread_unpark) config_.on_thread_unpark();
}

void MultiThread::hand_driver_over() noexcept {
  // Left parked (not counted as notified): it finds no work and parks again, in the driver.
  if (auto w = idle_.a_parked_worker()) workers_[*w]->parker.unpark();
}

void MultiThread::notify_parked(Idle::Published where) noexcept {
  if (auto w = idle_.worker_to_notify(where)) workers_[*w]->parker.unpark();
}

bool MultiThread::work_pending() const noexcept {
  for (const auto& w : workers_) {
    if (!w->queue.is_empty()) return true;
  }
  return !inject_.is_empty();
}

void MultiThread::schedule(TaskHeader* t, bool is_yield) noexcept {
  WorkerContext* ctx = current_worker;
  if (ctx != nullptr && ctx->scheduler == this && ctx->core != nullptr) {
    Core& core = *ctx->core;
    if (is_yield || !lifo_slot_) {
      push_local(core, t);
      return;
    }
    // A task woken or spawned by the running one runs next here (message passing stays
    // on one core); the slot's previous occupant goes to the queue.
    if (TaskHeader* prev = std::exchange(core.lifo, t)) push_local(core, prev);
    return;
  }
  schedule_remote(t);
}

void MultiThread::push_local(Core& core, TaskHeader* t) noexcept {
  workers_[core.index]->queue.push_back_or_overflow(t, inject_, drop_ref);
  if (core.is_searching) return;  // a searcher finds it
  if (core.batching_notify) {
    core.notify_after_batch = true;  // one notification for the whole batch
    return;
  }
  notify_parked(Idle::Published::kLocalQueue);
}

void MultiThread::schedule_remote(TaskHeader* t) noexcept {
  if (!inject_.push(t)) {
    drop_task_refs(t);  // shut down: the task is (being) cancelled anyway
    return;
  }
  notify_parked(Idle::Published::kInjectQueue);
}

void MultiThread::block_in_place(const std::function<void()>& fn) {
  WorkerContext* ctx = current_worker;
  if (ctx == nullptr || ctx->scheduler != this || ctx->core == nullptr) {
    fn();  // a blocking-pool thread, or a block_on thread: blocking is fine here
    return;
  }
  // Hand the core (local queue, LIFO slot) to a new thread, which runs the worker loop
  // while this thread blocks. This thread finishes the current poll without a core.
  // (The pool thread keeps the runtime alive, and is marked as its thread.)
  // No thread free to take it now (none idle, none can start, or shutting down): keep the
  // core and block here after all, rather than queue the core behind other blocking calls.
  Core* core = std::exchange(ctx->core, nullptr);
  bool handed = false;
  try {
    handed = blocking_.spawn_now(BlockingPool::Job{nullptr, [this, core] { run_worker(core); }});
  } catch (...) {
    // No memory for the job's function.
  }
  if (!handed) ctx->core = core;
  fn();
}

void MultiThread::close_and_stop(std::optional<std::chrono::steady_clock::time_point> deadline) {
  shutdown_.store(true, std::memory_order_release);
  inject_.close();
  for (auto& w : workers_) w->parker.unpark();
  bool all_left;
  {
    std::unique_lock lock(exit_mutex_);
    auto pred = [&] { return running_ == 0; };
    all_left =
        deadline ? exit_cv_.wait_until(lock, *deadline, pred) : (exit_cv_.wait(lock, pred), true);
  }
  for (std::thread& t : threads_) {
    if (all_left && t.get_id() != std::this_thread::get_id()) {
      t.join();  // every worker left its loop: these threads end promptly
    } else {
      t.detach();  // stuck in a poll past the deadline: it holds a reference to us
    }
  }
  threads_.clear();
}

void MultiThread::drain_queues() noexcept {
  {
    std::lock_guard lock(exit_mutex_);
    drained_ = true;  // a core still held (its thread stuck in a poll) is drained by its thread
    for (auto& core : cores_) {
      if (core_left_[core->index]) drain_core(*core);
    }
  }
  while (TaskHeader* t = inject_.pop()) drop_task_refs(t);
}

void MultiThread::drain_core(Core& core) noexcept {
  if (TaskHeader* t = std::exchange(core.lifo, nullptr)) drop_task_refs(t);
  while (TaskHeader* t = workers_[core.index]->queue.pop()) drop_task_refs(t);
}

void MultiThread::fill_metrics(RuntimeMetrics& m) {
  for (auto& w : workers_) {
    m.workers.push_back(WorkerMetrics{w->polls.load(std::memory_order_relaxed),
                                      w->steals.load(std::memory_order_relaxed),
                                      w->parks.load(std::memory_order_relaxed), w->queue.len()});
  }
  m.inject_queue_depth = inject_.len();
}

}  // namespace spool::detail
