#include "runtime/shared.hpp"

#include <cassert>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

#include "context/current.hpp"
#include "driver/time/clock.hpp"
#include "runtime/root_waker.hpp"
#include "sync/thread.hpp"
#include "task/harness.hpp"
#include "task/state.hpp"

namespace spool::detail {

namespace {

// Runtime tags for ChannelIds: unique per runtime (relaxed: only uniqueness matters).
std::atomic<std::uint32_t> next_runtime_tag{1};

}  // namespace

RuntimeShared::RuntimeShared(RuntimeConfig config)
    : config_(std::move(config)),
      levels_(config_),
      tag_(next_runtime_tag.fetch_add(1, std::memory_order_relaxed)),
      single_fifo_channel_(levels_.num_channels() == 1 && !levels_.any_earliest_deadline_first()),
      task_hooks_(make_task_hooks(config_, levels_)),
      timed_tasks_(task_hooks_ != nullptr && task_hooks_->timed()),
      plain_spawn_(single_fifo_channel_ && !timed_tasks_),
      blocking_(BlockingPool::Config{config_.max_blocking_threads, config_.blocking_keep_alive,
                                     config_.thread_name, config_.on_thread_start,
                                     config_.on_thread_stop, this,
                                     // A paused clock does not jump while a blocking call
                                     // runs (can_auto_advance below), so the driver must look
                                     // again when the last one ends: nothing else may wake it.
                                     [this] {
                                       if (driver_->time().clock().is_paused()) driver_->unpark();
                                     }}),
      driver_(std::make_shared<Driver>(Driver::Options{
          config_.timer_resolution, config_.start_paused,
          // One timer wheel per worker (see TimeDriver), unless Builder::timer_wheels says.
          static_cast<std::uint32_t>(config_.flavor != RuntimeConfig::Flavor::kMultiThread ? 1
                                     : config_.timer_wheels != 0
                                         ? config_.timer_wheels
                                         : MultiThread::num_workers(config_)),
          // A paused clock jumps ahead only while no blocking call runs and no task waits
          // to be run (on a current-thread runtime: a paused clock needs one).
          [this] {
            return blocking_.is_idle() && (!current_thread_ || !current_thread_->has_runnable());
          },
          // A multi-thread runtime's workers always drive it: no background thread.
          config_.flavor == RuntimeConfig::Flavor::kMultiThread,
          // build_runtime resolved it.
          config_.io_backend.value_or(IoBackend::kEpoll)})) {
  if (config_.flavor == RuntimeConfig::Flavor::kMultiThread) {
    multi_thread_ =
        std::make_unique<MultiThread>(this, config_, levels_, owned_, blocking_, driver_);
    scheduler_ = multi_thread_.get();
  } else {
    current_thread_ = std::make_unique<CurrentThread>(this, config_, levels_, owned_, driver_);
    scheduler_ = current_thread_.get();
  }
  scheduler_->set_observer(task_hooks_.get());
  blocking_scheduler_.set_observer(task_hooks_.get());
}

RuntimeShared::~RuntimeShared() { (void)shutdown(std::nullopt); }

void RuntimeShared::start() {
  blocking_.set_owner(weak_from_this());
  scheduler_->set_owner(weak_from_this());  // a task's pin (TaskHeader::scheduler_pin)
  if (!multi_thread_) return;               // a current-thread runtime runs on its block_on callers
  try {
    multi_thread_->start(weak_from_this());
  } catch (const std::system_error& e) {
    (void)shutdown(std::nullopt);  // stops the workers that did start
    throw std::system_error(e.code(),
                            "spool::Builder::build: could not start the runtime's worker threads "
                            "(ask for fewer with worker_threads(), or raise the process's thread "
                            "limit)");
  } catch (...) {
    (void)shutdown(std::nullopt);
    throw;
  }
}

TaskHeader* RuntimeShared::bind_new(TaskHeader* t) {
  assert(!t->pinned_for_life || t->scheduler_pin);  // set by the spawn before publication
  if (owned_.bind(t)) return t;
  // Shut down already: the task is cancelled at once. The list's reference was never
  // taken: dropped first, so that the cancel's completion sees only its own and the
  // JoinHandle's (and pins nothing). Its first notification serves as the claim.
  drop_task_refs(t);  // the owned-list reference (the claim's and the JoinHandle's remain)
  shutdown_task(t);   // consumes the claim
  return nullptr;
}

TaskHeader* RuntimeShared::publish(TaskHeader* t) {
  if (bind_new(t)) scheduler_->schedule(t, false);
  return t;
}

void RuntimeShared::check_channel(const ChannelId& channel, bool with_deadline) const {
  if (ChannelIdAccess::runtime_tag(channel) != tag_) {
    throw std::invalid_argument(
        "spool: spawn_on with a ChannelId of another runtime: ask this runtime for its own "
        "with Runtime::channel(name) / Handle::channel(name)");
  }
  if (with_deadline && !levels_.earliest_deadline_first(channel.index())) {
    throw std::invalid_argument("spool: spawn_on with a deadline onto channel \"" +
                                levels_.name(channel.index()) +
                                "\", which is FIFO: deadlines order earliest-deadline-first "
                                "channels only (Channel(name).earliest_deadline_first())");
  }
}

ChannelId RuntimeShared::channel(std::string_view name) const {
  if (auto c = levels_.find(name)) return ChannelIdAccess::make(tag_, *c);
  throw std::invalid_argument("spool: the runtime has no channel named \"" + std::string(name) +
                              "\"; its channels are: " + levels_.list_names());
}

TaskSide::Ptr RuntimeShared::make_side(bool edf, const Deadline* deadline,
                                       std::coroutine_handle<> frame, const char* name,
                                       SpawnLocation where) const {
  try {
    const Deadline edf_deadline = deadline != nullptr ? *deadline : Deadline::max();
    return TaskSide::make(edf ? &edf_deadline : nullptr, timed_tasks_);
  } catch (...) {
    frame.destroy();  // taken over from its Task already: the failed spawn frees it
    if (where.line & kNameOwnedBit) delete[] name;  // and the name it was given
    throw;
  }
}

TaskHeader* RuntimeShared::spawn_on(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                                    std::uint16_t channel, const Deadline* deadline,
                                    const char* name, SpawnLocation where) {
  TaskSide::Ptr side =
      side_for(levels_.earliest_deadline_first(channel), deadline, frame, name, where);
  TaskHeader* t = new_task(promise, frame, scheduler_, name, where);
  t->channel = channel;
  t->side = std::move(side);
  if (task_hooks_) task_hooks_->spawned(*t);
  return publish(t);
}

TaskHeader* RuntimeShared::spawn(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                                 const char* name, SpawnLocation where) {
  if (!plain_spawn_) return spawn_inheriting(promise, frame, name, where);
  // spawn_on without its tests: one FIFO channel and no task times need new_task's defaults
  // (channel 0, no TaskSide); the spawn hook costs a null test, hooks or not.
  TaskHeader* t = new_task(promise, frame, scheduler_, name, where);
  if (task_hooks_) [[unlikely]]
    task_hooks_->spawned(*t);
  return publish(t);
}

TaskHeader* RuntimeShared::spawn_inheriting(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                                            const char* name, SpawnLocation where) {
  return spawn_from(promise, frame, current_task(), name, where);
}

TaskHeader* RuntimeShared::spawn_from(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                                      const TaskHeader* spawner, const char* name,
                                      SpawnLocation where) {
  if (single_fifo_channel_) return spawn_on(promise, frame, 0, nullptr, name, where);
  if (spawner == nullptr || spawner->scheduler != scheduler_) {
    return spawn_on(promise, frame, levels_.default_channel(), nullptr, name, where);
  }
  const std::uint16_t ch = spawner->channel;
  if (!levels_.earliest_deadline_first(ch))
    return spawn_on(promise, frame, ch, nullptr, name, where);
  const Deadline inherited = spawner->deadline();
  return spawn_on(promise, frame, ch, &inherited, name, where);
}

TaskHeader* RuntimeShared::spawn_blocking(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                                          SpawnLocation where) {
  // Its channel only decides whether a drain waits for it: a blocking call made by a task of
  // a complete-on-close channel is part of that task's work.
  std::uint16_t ch = levels_.default_channel();
  if (const TaskHeader* spawner = current_task();
      spawner != nullptr && spawner->scheduler == scheduler_) {
    ch = spawner->channel;
  }
  // Pinned for life: its JoinHandle's abort may take it back from the pool's queue.
  std::shared_ptr<void> pin = shared_from_this();
  TaskSide::Ptr side = side_for(false, nullptr, frame, nullptr, where);
  TaskHeader* t = new_pinned_task(promise, frame, &blocking_scheduler_, where);
  t->scheduler_pin = std::move(pin);
  t->channel = ch;
  t->side = std::move(side);
  if (task_hooks_) task_hooks_->spawned(*t);
  if (!bind_new(t)) return t;
  bool queued;
  try {
    queued = blocking_scheduler_.submit(t);
  } catch (...) {
    // No blocking thread exists and none could start: the call will never run. Cancel the
    // task with its first notification as the claim (its frame's destructors run), drop
    // the JoinHandle's share, and tell the caller.
    transition_to_notified_and_cancel(*t);  // NOTIFIED already: only sets CANCELLED
    run_task(t, nullptr);
    join_drop(t);
    throw;
  }
  if (!queued) drop_task_refs(t);  // shut down meanwhile: the shutdown cancels the task
  return t;
}

void RuntimeShared::block_in_place(const std::function<void()>& fn) {
  with_scheduler([&](auto& s) { s.block_in_place(fn); });
}

void RuntimeShared::block_off_core(const std::function<void()>& fn) {
  if (multi_thread_) {
    multi_thread_->block_off_core(fn);
  } else {
    fn();  // a current-thread runtime's thread has no core to hand over
  }
}

void RuntimeShared::attach(std::unique_ptr<Attachment> a) {
  std::unique_lock lock(shutdown_mutex_);
  if (!shut_down_) {
    attachment_ = std::move(a);
    return;
  }
  lock.unlock();
  a.reset();
}

std::optional<ShutdownReport> RuntimeShared::shutdown(
    std::optional<std::chrono::nanoseconds> timeout) {
  std::lock_guard lock(shutdown_mutex_);
  if (shut_down_) return std::nullopt;
  shut_down_ = true;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Saturated: shutdown_timeout(nanoseconds::max()) means "no bound", not an overflow.
  if (timeout) deadline = saturating_add(std::chrono::steady_clock::now(), *timeout);
  // 0. Complete-on-close channels run to completion, and CloseGuards are waited for.
  if (levels_.complete_on_close_mask() != 0 || owned_.drain().guards() > 0) {
    report_ = drain(deadline);
  }
  // The console stops here, once a drain that hangs could still be looked at.
  attachment_.reset();
  // 1. No new task can slip in, and every task is asked to stop: one in a poll ends it at its
  //    next cooperative point (a CPU-bound loop's yield_if_requested, say).
  owned_.close();
  owned_.for_each([](TaskHeader& t) { transition_to_cancel_requested(t); });
  //    A reader holding a task for its backtrace gives it back first (rescheduled if it must
  //    be cancelled), before the scheduler stops: no claim starts after this (all refuse
  //    CANCELLED), and each one held is a few loads long.
  while (owned_.inspections().busy()) std::this_thread::yield();
  // 2. Stop the scheduler: its queues refuse remote schedules, its threads leave their loops
  //    (a current-thread runtime's shutdown takes its core instead).
  const std::size_t threads_left =
      with_scheduler([&](auto& s) { return s.close_and_stop(deadline); });
  if (threads_left > 0) report_left_in_poll();
  // 3. Cancel every task still alive (destructors of their locals run here), before waiting
  //    for the blocking pool: a blocking call may be waiting for one of them.
  while (TaskHeader* t = owned_.pop()) shutdown_task(t);
  // 4. The blocking pool: queued calls are dropped, running ones waited for.
  std::optional<std::chrono::nanoseconds> left;
  if (deadline)
    left = std::max(std::chrono::nanoseconds(0), *deadline - std::chrono::steady_clock::now());
  if (const std::size_t calls = blocking_.shutdown(left); calls > 0) {
    // Threads left inside their calls are threads left in a poll: the report says so.
    report_.threads_left_in_poll += calls;
    report_.left_in_poll +=
        std::to_string(calls) + " blocking-pool thread(s) still in a blocking-pool call\n";
  }
  // 5. Queue entries still hold references to the (now cancelled) tasks.
  with_scheduler([&](auto& s) { s.drain_queues(); });
  // 6. Timers still armed (held by futures outside the runtime) fire as shut down; the
  //    driver's background thread, if one was started, ends.
  driver_->shutdown();
  return report_;
}

namespace {

using TimePoint = std::chrono::steady_clock::time_point;

// Ready once the drain count is zero (true), or once `deadline` passed in real time (false;
// a DeadlineAlarm wakes the waker then). Real time, not the runtime's timers: they may be
// paused, or fired only by workers stuck in their polls.
class DrainWait {
 public:
  DrainWait(DrainCount& count, std::optional<TimePoint> deadline)
      : count_(count), deadline_(deadline) {}
  Poll<bool> poll(Context& cx) {
    if (count_.poll_drained(cx.waker())) return true;
    if (deadline_ && std::chrono::steady_clock::now() >= *deadline_) return false;
    return pending;
  }

 private:
  DrainCount& count_;
  std::optional<TimePoint> deadline_;
};

// A thread that wakes the drain's waiters at `deadline`, unless destroyed first (no thread
// without a deadline).
class DeadlineAlarm {
 public:
  DeadlineAlarm(DrainCount& count, std::optional<TimePoint> deadline) {
    if (!deadline) return;
    try {
      thread_ = start_thread("spool-shutdown", [this, &count, when = *deadline] {
        {
          std::unique_lock lock(mutex_);
          if (!cv_.wait_until(lock, when, [&] { return cancelled_; })) {
            lock.unlock();
            count.wake_waiters();
          }
        }
      });
    } catch (...) {
      // No thread for the alarm: the drain is bounded by its own progress only.
      std::fputs(
          "spool: shutdown_timeout could not start its alarm thread; the drain of "
          "complete-on-close channels is not bounded\n",
          stderr);
    }
  }
  ~DeadlineAlarm() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  DeadlineAlarm(const DeadlineAlarm&) = delete;
  DeadlineAlarm& operator=(const DeadlineAlarm&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool cancelled_ = false;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace

ShutdownReport RuntimeShared::drain(std::optional<TimePoint> deadline) {
  ShutdownReport report;
  DrainCount& count = owned_.drain();
  // From here a spawn onto a channel that is not complete-on-close is cancelled at once.
  owned_.begin_drain();
  // The tasks of those channels are cancelled now (as JoinHandle::abort does), by the
  // runtime's threads; the drained tasks waiting on them see them cancelled. Collected under
  // the list's locks (with a reference each), cancelled outside them: scheduling may wake a
  // thread.
  std::vector<TaskHeader*> undrained;
  owned_.for_each_undrained([&](TaskHeader& t) {
    ref_inc(t);
    undrained.push_back(&t);
  });
  for (TaskHeader* t : undrained) {
    if (transition_to_notified_and_cancel(*t) == WakeResult::kSubmit) submit_woken(t, false);
    drop_task_refs(t);
  }
  bool drained = false;
  if (multi_thread_) {
    // The workers run the drain: this thread only waits, in real time.
    drained = count.wait_drained(deadline);
  } else if (std::shared_ptr<RuntimeShared> self = weak_from_this().lock()) {
    // A current-thread runtime's tasks run on the thread that drives it: this one.
    try {
      DeadlineAlarm alarm(count, deadline);
      RuntimeBlockOn executor(std::move(self));
      DrainWait wait(count, deadline);
      for (;;) {
        Poll<bool> done = wait.poll(executor.context());
        if (done.is_ready()) {
          drained = std::move(done).value();
          break;
        }
        executor.park();
      }
    } catch (const NestedEventLoop&) {
      report.not_drained_reason =
          "the shutdown of a current_thread runtime ran inside an event loop (a block_on) on "
          "the same thread, so it could not run the drain; shut the runtime down from outside "
          "any block_on";
    }
  } else {
    report.not_drained_reason = "the runtime was dropped without a shutdown";
  }
  report.drained = drained;
  if (!drained) {
    report.pending_guards = static_cast<std::size_t>(count.guards());
    std::ostringstream out;
    owned_.for_each([&](const TaskHeader& t) {
      if (!owned_.is_drained(t)) return;
      ++report.pending_tasks;
      describe(t, out);
    });
    report.pending = out.str();
    if (report.not_drained_reason.empty()) {
      report.not_drained_reason = "the shutdown timeout passed first";
    }
  }
  return report;
}

void RuntimeShared::report_left_in_poll() {
  std::ostringstream out;
  std::size_t tasks = 0;
  owned_.for_each([&](const TaskHeader& t) {
    // A task of the scheduler still claimed is in the poll of a thread that did not leave
    // (the other threads may be on their way out, past their polls).
    if (t.scheduler == scheduler_ && (t.state.load(std::memory_order_acquire) & kRunning)) {
      ++tasks;
      describe(t, out);
    }
  });
  if (tasks == 0) {
    out << "a runtime thread that polls no task (a block_on's root future, or a callback)\n";
  }
  report_.threads_left_in_poll = std::max<std::size_t>(tasks, 1);
  report_.left_in_poll = out.str();
}

RuntimeMetrics RuntimeShared::metrics() {
  RuntimeMetrics m;
  for (std::uint16_t ch = 0; ch < levels_.num_channels(); ++ch) {
    m.channels.push_back(ChannelMetrics{levels_.name(ch), levels_.level_of(ch), 0, 0, {}, 0});
  }
  with_scheduler([&](auto& s) { s.fill_metrics(m); });
  m.levels.resize(levels_.num_levels());
  for (const ChannelMetrics& c : m.channels) {
    LevelMetrics& l = m.levels[c.level];
    l.queued += c.queued;
    l.polled += c.polled;
    l.busy_time += c.busy_time;
    l.deadline_misses += c.deadline_misses;
  }
  m.live_tasks = owned_.size();
  blocking_.fill_metrics(m);
  const TimerCounters timers = driver_->time().counters();
  m.timers_armed = timers.armed;
  m.timers_fired = timers.fired;
  m.timers_cancelled = timers.cancelled;
  m.driver_parks = timers.parks;
  m.timer_wheels = timers.wheels;
  const IoCounters io = driver_->io().counters();
  m.io_events = io.events;
  m.io_registrations = io.registered;
  m.io_accept_backoffs = io.accept_backoffs;
  m.io_backend = driver_->io().backend();
  m.io_rearms = io.rearms;
  m.worker_rings = io.worker_rings;
  m.worker_rings_deferred_taskrun = io.worker_rings_deferred;
  m.worker_rings_refused = io.worker_rings_refused;
  m.fs_blocking_ops = fs_blocking_ops_.load(std::memory_order_relaxed);
  m.fs_ring_ops = fs_ring_ops_.load(std::memory_order_relaxed);
  m.fs_inline_reads = fs_inline_reads_.load(std::memory_order_relaxed);
  return m;
}

// --- The free functions behind the public headers ---

void throw_no_current_runtime() {
  throw std::logic_error(
      "spool: there is no current runtime on this thread: call this from a task, from "
      "inside Runtime::block_on, or use a Runtime's handle() / spawn() directly");
}

std::shared_ptr<RuntimeShared> current_runtime() {
  RuntimeShared* rt = current_runtime_ptr();
  return rt ? rt->shared_from_this() : nullptr;
}

TaskHeader* spawn_task(RuntimeShared& rt, TaskPromiseBase& promise, std::coroutine_handle<> frame,
                       const char* name, SpawnLocation where) {
  return rt.spawn(promise, frame, name, where);
}

TaskHeader* spawn_task_on(RuntimeShared& rt, TaskPromiseBase& promise,
                          std::coroutine_handle<> frame, ChannelId channel,
                          const Deadline* deadline, const char* name, SpawnLocation where) {
  return rt.spawn_on(promise, frame, channel.index(), deadline, name, where);
}

Instant runtime_now(RuntimeShared& rt) { return rt.driver()->time().clock().now(); }

void check_channel(RuntimeShared& rt, const ChannelId& channel, bool with_deadline) {
  rt.check_channel(channel, with_deadline);
}

ChannelId runtime_channel(RuntimeShared& rt, std::string_view name) { return rt.channel(name); }

TaskHeader* spawn_blocking_task(RuntimeShared& rt, TaskPromiseBase& promise,
                                std::coroutine_handle<> frame, SpawnLocation where) {
  return rt.spawn_blocking(promise, frame, where);
}

ShutdownReport shutdown_runtime(RuntimeShared& rt, std::optional<std::chrono::nanoseconds> timeout,
                                bool from_destructor) {
  if (runtime_of_thread() != &rt) {
    std::optional<ShutdownReport> report = rt.shutdown(timeout);
    if (!report) return rt.shutdown_report();  // shut down before: that call's report
    if (from_destructor && !report->drained) {
      // Nobody reads the destructor's report: say it where a developer will see it.
      std::fprintf(stderr, "spool: a Runtime was destroyed before its drain finished: %s\n",
                   report->not_drained_reason.c_str());
    }
    return *report;
  }
  // On one of the runtime's own threads, shutdown would wait for this very thread.
  if (!from_destructor) {
    throw std::logic_error(
        "spool::Runtime::shutdown_timeout called from one of the runtime's own threads (a task "
        "or a blocking call): shutdown waits for those threads, so it would wait for itself; "
        "shut the runtime down from outside it");
  }
  // The Runtime was dropped inside one of its own tasks or blocking calls: finish the
  // shutdown on a separate thread, which keeps the shared state alive until it is done.
  try {
    start_thread("spool-shutdown", [keep = rt.shared_from_this()] {
      (void)keep->shutdown(std::nullopt);
    }).detach();
  } catch (...) {
    // No thread to finish it on, and this one cannot wait for itself: the runtime is left
    // running (its threads park), which is all that can be done without a hang.
    std::fputs(
        "spool: a Runtime dropped on one of its own threads could not start a thread to "
        "finish its shutdown; it is left running\n",
        stderr);
  }
  return {};
}

void add_close_guard(RuntimeShared& rt) noexcept { rt.add_close_guard(); }
void release_close_guard(RuntimeShared& rt) noexcept { rt.release_close_guard(); }
RuntimeMetrics runtime_metrics(RuntimeShared& rt) { return rt.metrics(); }
std::string runtime_dump(RuntimeShared& rt) { return rt.dump(); }
std::vector<TaskSnapshot> runtime_tasks(RuntimeShared& rt) { return rt.tasks(); }

void block_off_core(const std::function<void()>& fn) {
  RuntimeShared* rt = current_runtime_ptr();
  if (rt != nullptr) {
    rt->block_off_core(fn);
  } else {
    fn();
  }
}

void block_in_place_impl(const std::function<void()>& fn) {
  RuntimeShared* rt = current_runtime_ptr();
  if (rt == nullptr) {
    fn();
    return;
  }
  rt->block_in_place(fn);
}

}  // namespace spool::detail
