// spool::Builder: configures and builds a Runtime (spool/runtime.hpp, which includes this).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "spool/detail/runtime_config.hpp"
#include "spool/levels.hpp"
#include "spool/runtime.hpp"

namespace spool {

/// Configures and builds a Runtime. Every setter returns the builder; build() validates
/// the whole configuration and throws std::invalid_argument naming a bad setting.
class Builder {
 public:
  /// A work-stealing runtime with worker_threads() threads.
  static Builder multi_thread() { return Builder(detail::RuntimeConfig::Flavor::kMultiThread); }
  /// A runtime whose tasks run on the thread that calls block_on.
  static Builder current_thread() { return Builder(detail::RuntimeConfig::Flavor::kCurrentThread); }

  /// Number of worker threads (multi-thread only; default: one per online CPU). Must be > 0.
  Builder& worker_threads(std::size_t n) {
    config_.worker_threads = n;
    worker_threads_set_ = true;
    return *this;
  }
  /// Tasks a worker runs between two checks of its driver and of shutdown (default 61).
  Builder& event_interval(std::uint32_t ticks) {
    config_.event_interval = ticks;
    return *this;
  }
  /// A worker takes from the shared inject queue first every this many ticks, so remote
  /// tasks cannot starve (default 31).
  Builder& global_queue_interval(std::uint32_t ticks) {
    config_.global_queue_interval = ticks;
    return *this;
  }
  /// Whether a task woken or spawned by a task runs next on the same worker (default on).
  Builder& lifo_slot(bool enabled) {
    config_.lifo_slot = enabled;
    return *this;
  }
  /// Upper bound on blocking-pool threads (default 512). Must be > 0.
  Builder& max_blocking_threads(std::size_t n) {
    config_.max_blocking_threads = n;
    return *this;
  }
  /// How long an idle blocking-pool thread waits for work before it exits (default 10 s;
  /// std::chrono::nanoseconds::max(): it never exits before the shutdown).
  Builder& thread_keep_alive(std::chrono::nanoseconds d) {
    config_.blocking_keep_alive = d;
    return *this;
  }
  /// Called on each runtime thread (workers and blocking pool) when it starts.
  Builder& on_thread_start(std::function<void()> fn) {
    config_.on_thread_start = std::move(fn);
    return *this;
  }
  /// Called on each runtime thread just before it exits.
  Builder& on_thread_stop(std::function<void()> fn) {
    config_.on_thread_stop = std::move(fn);
    return *this;
  }
  /// Called on a worker just before it parks (has no work). A task it spawns or wakes runs
  /// first: the worker then does not park, and calls on_thread_unpark at once.
  Builder& on_thread_park(std::function<void()> fn) {
    config_.on_thread_park = std::move(fn);
    return *this;
  }
  /// Called on a worker just after it unparks.
  Builder& on_thread_unpark(std::function<void()> fn) {
    config_.on_thread_unpark = std::move(fn);
    return *this;
  }
  /// Called once for every task spawned onto the runtime (spawn, spawn_on, spawn_blocking,
  /// the children of JoinSet, TaskTracker, spool::scope and spool::join's stolen ones), on
  /// the spawning thread, before the task can run. Tokio's hook of the same name. Every task
  /// hook runs where a throw cannot go anywhere: a hook that throws ends the program
  /// (std::terminate). A runtime with no task hook pays one predictable branch per spawn,
  /// per poll and per completion (docs/observability.md).
  Builder& on_task_spawn(std::function<void(const TaskMeta&)> fn) {
    config_.on_task_spawn = std::move(fn);
    return *this;
  }
  /// Called once for every spawned task when it terminates: it finished, threw, or was
  /// cancelled (abort, shutdown), on the thread that completes it, before its JoinHandle
  /// can see the outcome.
  Builder& on_task_terminate(std::function<void(const TaskMeta&)> fn) {
    config_.on_task_terminate = std::move(fn);
    return *this;
  }
  /// Called on the polling thread just before each poll of a task.
  Builder& on_before_task_poll(std::function<void(const TaskMeta&)> fn) {
    config_.on_before_task_poll = std::move(fn);
    return *this;
  }
  /// Called on the polling thread just after each poll of a task (before on_task_terminate
  /// when the poll finished it).
  Builder& on_after_task_poll(std::function<void(const TaskMeta&)> fn) {
    config_.on_after_task_poll = std::move(fn);
    return *this;
  }
  /// The name of the runtime's threads, workers and blocking-pool threads alike, as `top -H`,
  /// `ps -L` and gdb show it (default "spool-worker"). Linux keeps the first 15 bytes.
  Builder& thread_name(std::string name) {
    config_.thread_name = std::move(name);
    return *this;
  }
  /// The length of one tick of the timer wheel (default 1 ms): the timers whose deadlines
  /// fall in one tick fire together, once the latest of those deadlines has passed — never
  /// early, at most one tick late plus wake-up latency (a timer alone in its tick fires at
  /// its deadline). Must be > 0.
  Builder& timer_resolution(std::chrono::nanoseconds d) {
    config_.timer_resolution = d;
    return *this;
  }
  /// The number of timer wheels of a multi_thread() runtime (default 0: one per worker, so
  /// that a worker arms and cancels its tasks' timers in a wheel no other worker touches).
  /// A timer is armed in the wheel of the worker that first polls it (worker index modulo
  /// the count); 1 gives one wheel shared by every worker (docs/time.md compares the two).
  /// At most worker_threads; a current_thread() runtime has one wheel and refuses another
  /// count.
  Builder& timer_wheels(std::size_t n) {
    config_.timer_wheels = n;
    return *this;
  }
  /// Starts the runtime with its clock paused (current_thread() only): time then moves only
  /// by spool::time::advance, or jumps to the next timer when every task waits. For tests.
  Builder& start_paused(bool paused) {
    config_.start_paused = paused;
    return *this;
  }
  /// The kernel interface the runtime's I/O driver waits on (default: the
  /// SPOOL_IO_BACKEND environment variable — "epoll", "io_uring" or "auto" — else
  /// kEpoll). kAuto takes io_uring where the kernel allows it and falls back to epoll;
  /// RuntimeMetrics::io_backend says which runs. build() throws std::system_error for
  /// kIoUring where io_uring cannot run (an old kernel, a seccomp filter, a spool built
  /// without liburing). Sockets behave the same on both (docs/io.md).
  Builder& io_backend(IoBackend backend) {
    config_.io_backend = backend;
    return *this;
  }
  /// How long a runtime thread that ran out of tasks keeps polling the I/O driver, without
  /// sleeping, before it parks (default 0: it parks at once, as tokio's workers do). Busy
  /// polling, as Linux's net.core.busy_poll: a server whose clients answer within the budget
  /// never pays a sleep and a wake-up per request (the peer's send no longer has to wake it),
  /// at the price of a CPU kept busy up to `budget` each time the runtime goes idle. Only
  /// once the runtime has opened a socket (a runtime without I/O parks at once), and only by
  /// one thread at a time (the one that holds the driver; the others park); a task that
  /// becomes runnable anywhere in the runtime and a shutdown end it at once.
  /// build() rejects a negative budget. docs/io.md has the figures.
  Builder& busy_poll(std::chrono::nanoseconds budget) {
    config_.busy_poll = budget;
    return *this;
  }
  /// The runtime's priority levels, highest first, each with its channels:
  /// `levels({Level{"interactive"}, Level{"tenant-a", "tenant-b"}})`. Without this call a
  /// runtime has one level with one channel, "default". build() rejects an empty list, an
  /// empty level, an empty or repeated channel name, and more than kMaxLevels levels or
  /// kMaxChannels channels.
  Builder& levels(std::vector<Level> list) {
    config_.levels.clear();
    for (const Level& level : list) {
      std::vector<detail::ChannelConfig> channels;
      for (const Channel& c : level.channels) {
        channels.push_back({c.name(), c.is_complete_on_close(), c.is_earliest_deadline_first()});
      }
      config_.levels.push_back(std::move(channels));
    }
    levels_set_ = true;
    return *this;
  }
  /// Between levels, a worker always takes the highest level with work (the default).
  Builder& schedule(HighestFirst) {
    config_.round_robin = false;
    config_.slices.clear();
    return *this;
  }
  /// Between levels, each worker cycles through them, one time slice each (one per level,
  /// each positive; build() checks).
  Builder& schedule(RoundRobin policy) {
    config_.round_robin = true;
    config_.slices = std::move(policy.slices);
    return *this;
  }
  /// Where spawns from outside any task of the runtime go (default: the first channel of
  /// the lowest level). build() rejects a name that is not one of levels()'s channels.
  Builder& default_channel(std::string name) {
    config_.default_channel = std::move(name);
    return *this;
  }
  /// Serves the runtime's console (docs/console.md) on a Unix socket at `path`, owner-only
  /// (mode 0600), from a thread of its own, until the shutdown (after the drain of
  /// complete-on-close channels) unlinks it; `spool-console <path>` shows it. Overrides the
  /// SPOOL_CONSOLE environment variable, which names a path for runtimes built without this
  /// setting; `console("")` serves none, whatever SPOOL_CONSOLE says. build() throws
  /// std::invalid_argument when `path` exists and is not a socket, or a live program serves
  /// there, and std::system_error when it cannot bind (a missing directory, say); a socket
  /// left by a program that exited is replaced. Without a console: no thread, no cost. The
  /// console shows task times where the runtime measures them (measure_task_times).
  Builder& console(std::string path) {
    config_.console = std::move(path);
    return *this;
  }
  /// Measures where each task's time goes — busy in its polls, scheduled (queued after a
  /// wake), idle, its longest poll and a histogram of its polls — for Runtime::tasks()
  /// (TaskSnapshot::times) and the console. Off by default: it reads the clock twice per poll
  /// and once per wake (docs/observability.md has the cost). SPOOL_TASK_TIMES=1 in the
  /// environment turns it on for every runtime, as SPOOL_CONSOLE serves a console.
  Builder& measure_task_times(bool on = true) {
    config_.measure_task_times = on;
    return *this;
  }
  /// Seed of the scheduler's random choices (which worker to steal from first), so that
  /// tests can make them repeatable.
  Builder& rng_seed(std::uint64_t seed) {
    config_.seed = seed;
    return *this;
  }

  /// Validates the configuration, starts the runtime's threads and returns it.
  Runtime build() {
    if (config_.flavor == detail::RuntimeConfig::Flavor::kCurrentThread && worker_threads_set_) {
      throw std::invalid_argument(
          "spool::Builder: worker_threads() applies to multi_thread() runtimes only; a "
          "current_thread() runtime runs its tasks on the thread that calls block_on");
    }
    if (worker_threads_set_ && config_.worker_threads == 0) {
      throw std::invalid_argument(
          "spool::Builder: worker_threads(0): a multi-thread runtime needs at least one worker "
          "thread (leave it unset for one per CPU)");
    }
    if (config_.worker_threads > detail::kMaxWorkerThreads) {
      throw std::invalid_argument("spool::Builder: worker_threads(" +
                                  std::to_string(config_.worker_threads) +
                                  "): a runtime has at most " +
                                  std::to_string(detail::kMaxWorkerThreads) + " worker threads");
    }
    if (levels_set_ && config_.levels.empty()) {
      throw std::invalid_argument(
          "spool::Builder: levels({}): a runtime needs at least one level of at least one "
          "channel (leave levels() out for a single \"default\" channel)");
    }
    Runtime rt(detail::build_runtime(config_));
    detail::start_console(*rt.rt_, config_);  // should it throw, rt shuts down
    return rt;
  }

 private:
  explicit Builder(detail::RuntimeConfig::Flavor flavor) { config_.flavor = flavor; }
  detail::RuntimeConfig config_;
  bool worker_threads_set_ = false;
  bool levels_set_ = false;
};

}  // namespace spool
