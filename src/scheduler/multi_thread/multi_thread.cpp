#include "scheduler/multi_thread/multi_thread.hpp"

#include <algorithm>

#include "context/budget.hpp"
#include "context/current.hpp"
#include "context/deferred.hpp"
#include "context/enter.hpp"
#include "scheduler/multi_thread/worker_context.hpp"
#include "scheduler/pick.hpp"
#include "spool/fork.hpp"
#include "sync/thread.hpp"
#include "task/harness.hpp"

namespace spool::detail {

thread_local WorkerContext* current_worker = nullptr;

namespace {

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

MultiThread::MultiThread(RuntimeShared* runtime, const RuntimeConfig& config,
                         const LevelTable& levels, OwnedTasks& owned, BlockingPool& blocking,
                         std::shared_ptr<Driver> driver)
    : runtime_(runtime),
      config_(config),
      event_interval_(config.event_interval),
      global_queue_interval_(config.global_queue_interval),
      lifo_slot_(config.lifo_slot),
      levels_(levels),
      num_levels_(levels.num_levels()),
      num_channels_(levels.num_channels()),
      round_robin_(levels.round_robin()),
      has_levels_(num_channels_ > 1 || levels.any_earliest_deadline_first()),
      owned_(owned),
      blocking_(blocking),
      driver_(std::move(driver)),
      num_workers_(static_cast<std::uint32_t>(num_workers(config))),
      injects_(new PaddedInject[num_channels_]),
      handed_off_polls_(new ChannelCounters[num_channels_]),
      edf_(levels.any_earliest_deadline_first() ? new EdfQueue[num_channels_] : nullptr),
      queued_(new LevelCount[num_levels_]),
      idle_(num_workers_) {
  for (std::uint32_t i = 0; i < num_workers_; ++i) {
    workers_.push_back(std::make_unique<WorkerShared>(num_channels_));
    auto core = std::make_unique<Core>(levels_);
    core->index = i;
    core->queues = workers_.back()->queues.get();
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
  // HighestFirst with more than one level: the tasks polled here honour yield requests.
  YieldRequestScope yield_requests(
      num_levels_ > 1 && !round_robin_ ? &workers_[core->index]->yield.requested : nullptr);
  WorkerContext ctx{this, core, &slot};
  WorkerContext* saved = std::exchange(current_worker, &ctx);
  DeferredWakes deferred;
  {
    DeferredWakesScope defer_here(&deferred);
    if (has_levels_) {
      worker_loop<true>(deferred);
    } else {
      worker_loop<false>(deferred);
    }
  }
  // Into the core's queue (drained at shutdown), or the inject queue when block_in_place
  // took the core (dropped there if shut down).
  wake_deferred(deferred);
  current_worker = saved;
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

template <bool kLevels>
void MultiThread::worker_loop(DeferredWakes& deferred) {
  WorkerContext& ctx = *current_worker;
  while (ctx.core != nullptr && !is_shutdown()) {
    Core& c = *ctx.core;
    // Maintenance, every event_interval: tasks that yielded rejoin the queue, and the
    // driver is polled (due timers fire even while every worker is busy).
    if (++c.tick % event_interval_ == 0) {
      requeue_deferred(c, deferred);
      driver_->maintain();
    }
    if (kLevels && num_levels_ > 1) {
      // Tasks that yielded rejoin their channels before each pick: in the deferred list they
      // would be invisible to the choice of level (a yielded high-level task would let
      // low-level ones run; a level whose tasks all yielded would give its slice away).
      requeue_deferred(c, deferred);
      workers_[c.index]->yield.clear_before_pick();
    }
    TaskHeader* t = next_task<kLevels>(c);
    if (t != nullptr) {
      run_task_on<kLevels>(t);
      // With levels, a due timer fires after every poll, not only at maintenance: its task
      // may be of a higher level than the work that keeps every worker busy (the clock read
      // adds to the two each poll already makes there).
      if constexpr (kLevels) driver_->maintain_if_due();
      continue;
    }
    if (requeue_deferred(c, deferred)) continue;    // only yielded tasks are left: run them
    if (c.is_searching && steal_fork(c)) continue;  // a join's child, now a task in the slot
    if (busy_poll(c)) continue;
    park(c);
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

template <bool kLevels>
void MultiThread::run_task_on(TaskHeader* t) {
  WorkerContext& ctx = *current_worker;
  transition_from_searching(*ctx.core);
  int lifo_polls = 0;
  for (;;) {
    WorkerShared& w = *workers_[ctx.core->index];
    if (kLevels && num_levels_ > 1 && !may_poll_now(*ctx.core, w, t)) return;
    w.polls.store(w.polls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if constexpr (kLevels) {
      const std::uint16_t channel = t->channel;  // (the poll may free t)
      const std::chrono::nanoseconds busy = timed_poll(t, ctx.slot);
      if (ctx.core != nullptr) {
        w.channels[channel].record(busy);
      } else {
        // block_in_place took the core during the poll: the thread that holds it now writes
        // w's counters, so this poll goes where any thread may add.
        handed_off_polls_[channel].record_shared(busy);
      }
    } else {
      run_task(t, ctx.slot);
    }
    if (ctx.core == nullptr) return;  // block_in_place took the core during the poll
    t = std::exchange(ctx.core->lifo, nullptr);
    if (t == nullptr) return;
    if (kLevels && num_levels_ > 1) w.yield.clear_before_pick();
    if (lifo_polls++ == kMaxLifoPolls || (kLevels && higher_level_waits(t))) {
      // The LIFO task has had its turns (or a higher level's task waits): put it behind the
      // queue so others get theirs. Into an empty queue it is this worker's very next task,
      // as if it had stayed in the slot: waking a parked worker to steal it would only move it.
      const std::uint16_t ch = channel_of<kLevels>(t);
      LocalQueue<>& q = w.queues[ch];
      const bool others_waiting = !q.is_empty();
      if constexpr (kLevels) count_queued(t, 1);
      q.push_back_or_overflow(t, injects_[ch].queue, drop_ref);
      if (others_waiting) notify_parked(Idle::Published::kLocalQueue);
      return;
    }
  }
}

bool MultiThread::may_poll_now(Core& core, WorkerShared& w, TaskHeader* t) noexcept {
  w.yield.running_level.store(levels_.level_of(t->channel), std::memory_order_seq_cst);
  if (round_robin_ || !higher_level_queued(t)) return true;
  // A higher level's task was queued since the pick (and its queuer may have seen this
  // worker's old level, so asked nobody): this one goes back to its channel's queue (its EDF
  // queue, or this worker's ring), the next pick takes the higher one.
  if (is_edf(t->channel)) {
    queue_edf(t);
    return false;
  }
  count_queued(t, 1);
  core.queues[t->channel].push_back_or_overflow(t, injects_[t->channel].queue, drop_ref);
  return false;
}

template <bool kLevels>
TaskHeader* MultiThread::next_task(Core& core) {
  // One channel: the order below degenerates to that channel's queues, then stealing.
  if (!kLevels || num_channels_ == 1) {
    if (TaskHeader* t = next_in_channel<kLevels>(core, 0)) return t;
    return steal_work(core, 0);
  }
  return pick_by_level(
      levels_, core.cursor, [&](std::uint16_t level) { return level_may_have_work(core, level); },
      [&](std::uint16_t level) { return next_in_level(core, level); });
}

bool MultiThread::level_may_have_work(const Core& core, std::uint16_t level) const noexcept {
  if (num_levels_ == 1) return true;
  if (queued_[level].queued.load(std::memory_order_seq_cst) > 0) return true;
  return core.lifo != nullptr && levels_.level_of(core.lifo->channel) == level;
}

bool MultiThread::higher_level_queued(const TaskHeader* t) const noexcept {
  for (std::uint16_t l = 0, mine = levels_.level_of(t->channel); l < mine; ++l) {
    if (queued_[l].queued.load(std::memory_order_seq_cst) > 0) return true;
  }
  return false;
}

void MultiThread::add_queued(const TaskHeader* t, std::int64_t delta) noexcept {
  queued_[levels_.level_of(t->channel)].queued.fetch_add(delta, std::memory_order_seq_cst);
}

TaskHeader* MultiThread::next_in_level(Core& core, std::uint16_t level) {
  // The level's channels in turn: first what this worker and the inject queues hold, then
  // what other workers hold.
  if (TaskHeader* t = pick_by_channel(levels_, core.cursor, level, [&](std::uint16_t ch) {
        return next_in_channel<true>(core, ch);
      })) {
    return t;
  }
  return pick_by_channel(levels_, core.cursor, level,
                         [&](std::uint16_t ch) { return steal_work(core, ch); });
}

template <bool kLevels>
TaskHeader* MultiThread::next_in_channel(Core& core, std::uint16_t channel) {
  if (kLevels && is_edf(channel)) return pop_edf(channel);
  InjectQueue& inject = injects_[channel].queue;
  bool from_lifo = false;  // the LIFO slot's task is not counted in its level's number
  TaskHeader* t = pick_next_task(
      core.tick, global_queue_interval_, [&] { return inject.pop(); },
      [&]() -> TaskHeader* {
        if (core.lifo != nullptr && (!kLevels || core.lifo->channel == channel)) {
          from_lifo = true;
          return std::exchange(core.lifo, nullptr);
        }
        return core.queues[channel].pop();
      },
      [&] { return next_from_inject(core, channel); });
  if (kLevels && t != nullptr && !from_lifo) count_queued(t, -1);
  return t;
}

// Takes a share of the inject queue: one task to run now and a batch for the local queue.
TaskHeader* MultiThread::next_from_inject(Core& core, std::uint16_t channel) {
  InjectQueue& inject = injects_[channel].queue;
  if (inject.is_empty()) return nullptr;
  constexpr std::size_t kMaxBatch = 64;
  std::size_t share = std::min(kMaxBatch, inject.len() / num_workers_ + 1);
  TaskHeader* batch[kMaxBatch];
  std::size_t n = inject.pop_n(batch, share);
  if (n == 0) return nullptr;
  LocalQueue<>& q = core.queues[channel];
  for (std::size_t i = 1; i < n; ++i) q.push_back_or_overflow(batch[i], inject, drop_ref);
  // The rest of the batch left the inject queue for this worker's: a worker that searched
  // or re-checked meanwhile saw it in neither, and may have parked. A searching worker
  // tells one when it stops searching (transition_from_searching); any other must tell one
  // now, or the batch waits for this worker, which may stay in its task for good. The
  // notification's seq_cst RMW on the idle word comes after the pushes: ordered against a
  // parking worker's RMW, either it wakes that worker or that worker's re-check sees them.
  if (n > 1 && !core.is_searching) notify_parked(Idle::Published::kLocalQueue);
  return batch[0];
}

TaskHeader* MultiThread::steal_work(Core& core, std::uint16_t channel) {
  if (is_edf(channel)) return nullptr;  // one shared queue: next_in_channel looked already
  if (!core.is_searching) {
    if (idle_.transition_to_searching()) {
      core.is_searching = true;
    } else if (num_levels_ == 1) {
      return nullptr;  // enough workers search already
    }
    // With levels a worker steals even when enough others search: it must not run a lower
    // level while a higher one waits in another worker's ring (it steals without counting as
    // a searcher, so the idle protocol is unchanged).
  }
  LocalQueue<>& mine = core.queues[channel];
  std::uint32_t start = static_cast<std::uint32_t>(next_random(core.rng) % num_workers_);
  for (std::uint32_t i = 0; i < num_workers_; ++i) {
    std::uint32_t victim = (start + i) % num_workers_;
    if (victim == core.index) continue;
    if (TaskHeader* t = workers_[victim]->queues[channel].steal_into(mine)) {
      WorkerShared& w = *workers_[core.index];
      w.steals.store(w.steals.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      count_queued(t, -1);
      return t;
    }
  }
  TaskHeader* t = next_from_inject(core, channel);
  if (t != nullptr) count_queued(t, -1);
  return t;
}

bool MultiThread::steal_fork(Core& core) {
  std::uint32_t start = static_cast<std::uint32_t>(next_random(core.rng) % num_workers_);
  for (std::uint32_t i = 0; i < num_workers_; ++i) {
    std::uint32_t victim = (start + i) % num_workers_;
    if (victim == core.index) continue;
    if (ForkItem* item = workers_[victim]->forks.steal()) {
      WorkerShared& w = *workers_[core.index];
      w.steals.store(w.steals.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      item->run_remote(item);
      return true;
    }
  }
  return false;
}

void MultiThread::spill_forks(Core& core) noexcept {
  ForkDeque& forks = workers_[core.index]->forks;
  while (ForkItem* item = forks.pop()) item->run_remote(item);
}

bool MultiThread::fork_site_here(ForkSite& site) noexcept {
  WorkerContext* ctx = current_worker;
  if (ctx == nullptr || ctx->core == nullptr) return false;
  MultiThread& mt = *ctx->scheduler;
  site.deque = &mt.workers_[ctx->core->index]->forks;
  site.runtime = mt.runtime_;
  if (mt.has_levels_) site.parent = current_task();  // without levels: nothing to inherit
  return true;
}

bool fork_push(ForkDeque& deque, ForkItem& item) noexcept {
  bool was_empty;
  if (!deque.push(&item, was_empty)) return false;
  if (was_empty) current_worker->scheduler->fork_pushed_into_empty();
  return true;
}

ForkItem* fork_pop(ForkDeque& deque) noexcept {
  // Only the core's holder owns its deque: after block_in_place this thread has none (and
  // spill_forks emptied it).
  WorkerContext* ctx = current_worker;
  if (ctx == nullptr || ctx->core == nullptr ||
      &ctx->scheduler->workers_[ctx->core->index]->forks != &deque) {
    return nullptr;
  }
  return deque.pop();
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
  // A worker that pushers may have relied on re-checks every queue once counted parked: the
  // last searcher (pushers skipped waking anyone because it was searching) and, with levels,
  // a worker that never searched. That one skipped every level whose queued count read zero
  // (level_may_have_work), or found only EDF channels, which nobody steals from (steal_work),
  // so it never became a searcher; a task pushed after those reads found it still counted
  // unparked, and its pusher woke nobody (Idle::should_notify pairs with this re-check as
  // with the last searcher's).
  const bool never_searched = has_levels_ && !core.is_searching;
  if ((idle_.transition_to_parked(core.index, core.is_searching) || never_searched) &&
      work_pending()) {
    notify_parked(Idle::Published::kLocalQueue);
  }
  core.is_searching = false;
  WorkerShared& w = *workers_[core.index];
  w.yield.running_level.store(0, std::memory_order_relaxed);  // idle: nothing to ask to yield
  while (!is_shutdown()) {
    w.parks.store(w.parks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    // In the driver if no other worker holds it (then it waits for the next timer too).
    const bool drove = driver_->park_thread(w.parker);
    bool found_work = false;
    if (!idle_.is_parked(core.index)) {
      core.is_searching = true;  // a notify unparked us and counted us as searching
      found_work = true;
    } else if (core.lifo != nullptr || has_local_work(w)) {
      // Timers fired here woke tasks into our queue. A notify that took us out of the list
      // since the check above counted us as searching: then we are.
      core.is_searching = !idle_.unpark_by_id(core.index);
      found_work = true;
    }
    if (!found_work) continue;
    // Leaving the driver for work while timers wait or sockets are open: hand it over (else
    // the timers and the I/O events would wait for a maintenance tick).
    if (drove && (driver_->time().has_timers() || driver_->io().active())) hand_driver_over();
    break;
  }
  if (is_shutdown()) idle_.unpark_by_id(core.index);
  if (config_.on_thread_unpark) config_.on_thread_unpark();
}

void MultiThread::hand_driver_over() noexcept {
  // Left parked (not counted as notified): it finds no work and parks again, in the driver.
  if (auto w = idle_.a_parked_worker()) workers_[*w]->parker.unpark();
}

bool MultiThread::notify_parked(Idle::Published where) noexcept {
  auto w = idle_.worker_to_notify(where);
  if (!w) return false;
  workers_[*w]->parker.unpark();
  return true;
}

bool MultiThread::has_local_work(const WorkerShared& w) const noexcept {
  for (std::uint16_t ch = 0; ch < num_channels_; ++ch) {
    if (!w.queues[ch].is_empty()) return true;
  }
  return false;
}

bool MultiThread::work_pending() const noexcept {
  for (const auto& w : workers_) {
    if (has_local_work(*w) || !w->forks.is_empty()) return true;
  }
  for (std::uint16_t ch = 0; ch < num_channels_; ++ch) {
    if (!injects_[ch].queue.is_empty()) return true;
    if (is_edf(ch) && !edf_[ch].is_empty()) return true;
  }
  return false;
}

bool MultiThread::busy_poll(Core& core) {
  // The poll watches every queue, not only this worker's: it is still counted unparked, and
  // usually as a searcher, so a task pushed meanwhile on another worker or into the inject
  // queue may have woken nobody (pushers skip their wake-up while someone searches, and a
  // polling worker is not in the sleeper list). A worker that could not become a searcher
  // may see another's task it cannot steal yet; it polls again until the task is gone, as
  // the searcher that will take it does. The park after a fruitless poll re-checks as usual.
  const bool found = driver_->busy_poll(
      config_.busy_poll, [&] { return core.lifo != nullptr || work_pending() || is_shutdown(); });
  // Leaving the driver for work while sockets are open (a poll needs one): hand it over, as
  // a worker leaving a park in the driver does (the others parked on their own parkers while
  // this one held it, and would not see a timer come due or a socket wake meanwhile).
  if (found) hand_driver_over();
  return found;
}

void MultiThread::schedule(TaskHeader* t, bool is_yield) noexcept {
  if (has_levels_) {
    schedule_as<true>(t, is_yield);
  } else {
    schedule_as<false>(t, is_yield);
  }
}

template <bool kLevels>
void MultiThread::schedule_as(TaskHeader* t, bool is_yield) noexcept {
  if (kLevels && is_edf(t->channel)) {
    push_edf(t);
    return;
  }
  WorkerContext* ctx = current_worker;
  if (ctx != nullptr && ctx->scheduler == this && ctx->core != nullptr) {
    schedule_local<kLevels>(*ctx->core, t, is_yield);
    return;
  }
  schedule_remote<kLevels>(t);
}

template <bool kLevels>
void MultiThread::schedule_local(Core& core, TaskHeader* t, bool is_yield) noexcept {
  if (is_yield || !lifo_slot_ || (kLevels && !lifo_allowed(*workers_[core.index], t))) {
    push_local<kLevels>(core, t);
    return;
  }
  // A task woken or spawned by the running one runs next here (message passing stays
  // on one core); the slot's previous occupant goes to the queue.
  if (TaskHeader* prev = std::exchange(core.lifo, t)) push_local<kLevels>(core, prev);
}

template <bool kLevels>
void MultiThread::push_local(Core& core, TaskHeader* t) noexcept {
  const std::uint16_t channel = channel_of<kLevels>(t);  // (t may be stolen and gone once queued)
  if constexpr (kLevels) count_queued(t, 1);
  core.queues[channel].push_back_or_overflow(t, injects_[channel].queue, drop_ref);
  if (core.is_searching) return;  // a searcher finds it
  if (core.batching_notify) {
    core.notify_after_batch = true;  // one notification for the whole batch
    return;
  }
  const bool woke = notify_parked(Idle::Published::kLocalQueue);
  if (kLevels && num_levels_ > 1 && !woke) request_yield(levels_.level_of(channel));
}

template <bool kLevels>
void MultiThread::schedule_remote(TaskHeader* t) noexcept {
  const std::uint16_t channel = channel_of<kLevels>(t);  // (t may be gone once queued)
  if constexpr (kLevels) count_queued(t, 1);
  if (!injects_[channel].queue.push(t)) {
    if constexpr (kLevels) count_queued(t, -1);
    drop_task_refs(t);  // shut down: the task is (being) cancelled anyway
    return;
  }
  const bool woke = notify_parked(Idle::Published::kInjectQueue);
  if (kLevels && num_levels_ > 1 && !woke) request_yield(levels_.level_of(channel));
}

}  // namespace spool::detail
