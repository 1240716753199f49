// spool::Runtime, Handle, spawn, spawn_blocking, block_in_place (and Builder: builder.hpp).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/block_on.hpp"
#include "spool/coop.hpp"
#include "spool/core/future.hpp"
#include "spool/core/task.hpp"
#include "spool/detail/current_runtime.hpp"
#include "spool/detail/runtime_config.hpp"
#include "spool/detail/saturating_add.hpp"
#include "spool/join_handle.hpp"
#include "spool/levels.hpp"
#include "spool/metrics.hpp"
#include "spool/task_meta.hpp"
#include "spool/time/sleep.hpp"

namespace spool {

/// What a shutdown found about the drain of complete-on-close channels (docs/levels.md).
struct ShutdownReport {
  /// True if every task of a complete-on-close channel finished and every CloseGuard was
  /// released before the tasks left were cancelled (always true without such channels or
  /// guards).
  bool drained = true;
  /// When not drained: why (the timeout passed first, or the shutdown could not wait).
  std::string not_drained_reason;
  /// When not drained: the complete-on-close tasks still alive then (they were cancelled).
  std::size_t pending_tasks = 0;
  /// When not drained: the CloseGuards still held then.
  std::size_t pending_guards = 0;
  /// When not drained: one line per pending task, as Runtime::dump() prints it.
  std::string pending;
  /// Runtime threads still inside a task's poll, or a blocking-pool call, when the shutdown
  /// stopped waiting for them (shutdown_timeout's deadline passed): left running, detached.
  /// A poll ends at its task's next cooperative point (a leaf's budget check or
  /// yield_if_requested: docs/scheduler.md), so this counts code that reaches none.
  std::size_t threads_left_in_poll = 0;
  /// One line per task such a thread was polling (its id and channel, as Runtime::dump()
  /// prints it), per thread polling no task (a block_on's root), and for the pool's calls.
  std::string left_in_poll;
  /// True if the drain completed and no thread was left inside a poll.
  bool clean() const noexcept { return drained && threads_left_in_poll == 0; }
};

namespace detail {
class RuntimeShared;

// The deadline of a task on an earliest-deadline-first channel.
using Deadline = std::chrono::steady_clock::time_point;
// Spawns a Task frame taken over by take_for_spawn onto the spawning task's channel (and
// deadline) if a task of `rt` spawns it, else onto the default channel; returns its header
// (JoinHandle). The task records its name `name` (null: none) and spawn location `where`,
// and owns the name when `where.line` has kNameOwnedBit (it frees it even should the spawn
// fail).
SPOOL_API TaskHeader* spawn_task(RuntimeShared& rt, TaskPromiseBase& promise,
                                 std::coroutine_handle<> frame, const char* name,
                                 SpawnLocation where);
// The same onto `channel` (checked by check_channel) with `deadline` (null: none).
SPOOL_API TaskHeader* spawn_task_on(RuntimeShared& rt, TaskPromiseBase& promise,
                                    std::coroutine_handle<> frame, ChannelId channel,
                                    const Deadline* deadline, const char* name,
                                    SpawnLocation where);
// Checks that `channel` is one of rt's channels, and that it is earliest-deadline-first if
// `with_deadline`; throws std::invalid_argument if not.
SPOOL_API void check_channel(RuntimeShared& rt, const ChannelId& channel, bool with_deadline);
// The channel of `rt` called `name`; throws std::invalid_argument if there is none.
SPOOL_API ChannelId runtime_channel(RuntimeShared& rt, std::string_view name);
SPOOL_API TaskHeader* spawn_blocking_task(RuntimeShared& rt, TaskPromiseBase& promise,
                                          std::coroutine_handle<> frame, SpawnLocation where);
// The runtime the calling thread is in (a worker, or inside Runtime::block_on), or null.
SPOOL_API std::shared_ptr<RuntimeShared> current_runtime();
[[noreturn]] SPOOL_API void throw_no_current_runtime();
SPOOL_API void block_in_place_impl(const std::function<void()>& fn);
SPOOL_API std::shared_ptr<RuntimeShared> build_runtime(RuntimeConfig config);
// Starts `rt`'s console server (docs/console.md) at config.console's path, else at
// SPOOL_CONSOLE's; nothing (no thread) when neither names one. Throws as the server does for
// config.console; reports a failure for SPOOL_CONSOLE on stderr and serves no console.
SPOOL_API void start_console(RuntimeShared& rt, const RuntimeConfig& config);
// Shuts `rt` down. On one of its own threads: throws std::logic_error, or — called from
// ~Runtime — finishes the shutdown on a background thread.
SPOOL_API ShutdownReport shutdown_runtime(RuntimeShared& rt,
                                          std::optional<std::chrono::nanoseconds> timeout,
                                          bool from_destructor);
// CloseGuard's side of the runtime's drain count.
SPOOL_API void add_close_guard(RuntimeShared& rt) noexcept;
SPOOL_API void release_close_guard(RuntimeShared& rt) noexcept;
SPOOL_API RuntimeMetrics runtime_metrics(RuntimeShared& rt);
SPOOL_API std::string runtime_dump(RuntimeShared& rt);
SPOOL_API std::vector<TaskSnapshot> runtime_tasks(RuntimeShared& rt);

// Runtime::block_on's thread-side state: enters the runtime (Handle::current works) and,
// for a current-thread runtime, drives its tasks while the root future waits.
class SPOOL_API RuntimeBlockOn {
 public:
  explicit RuntimeBlockOn(std::shared_ptr<RuntimeShared> rt);
  ~RuntimeBlockOn();
  RuntimeBlockOn(const RuntimeBlockOn&) = delete;
  RuntimeBlockOn& operator=(const RuntimeBlockOn&) = delete;
  Context& context() noexcept;
  // Returns once the root future was woken (running the runtime's tasks meanwhile when
  // this thread drives a current-thread runtime).
  void park();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

template <class F>
using spawn_output_t = future_output_t<std::remove_cvref_t<F>>;

// Turns any Future into a Task (one frame holding the future), so every spawned task is
// a Task frame with its header in front.
template <Future F>
Task<future_output_t<F>> future_as_task(F fut) {
  co_return co_await fut;  // polled in place, in this frame
}

template <class F>
auto into_task(F&& fut) {
  using Plain = std::remove_cvref_t<F>;
  if constexpr (is_task_v<Plain>) {
    return Plain(std::forward<F>(fut));
  } else {
    return future_as_task<Plain>(Plain(std::forward<F>(fut)));
  }
}

template <class Fn>
Task<std::invoke_result_t<Fn&>> blocking_body(Fn fn) {
  co_return fn();
}

// What every spawn function shares: turns `fut` (a Named one's wrapped future) into a Task
// frame, hands the frame to `spawn_frame(promise, frame)`, which spawns it and returns its
// header, and returns the JoinHandle.
template <Future F, class SpawnFrame>
JoinHandle<spawn_output_t<F>> spawn_as_task(F&& fut, SpawnFrame spawn_frame) {
  auto task = into_task(unnamed(std::forward<F>(fut)));
  auto frame = take_for_spawn(task);
  return JoinHandleAccess::make<spawn_output_t<F>>(spawn_frame(frame.promise(), frame));
}

// Spawns `fut` on `rt` onto the spawner's channel or the default one (see spawn_task),
// recording `site`'s name and location (spawn_guarded; a spawn_site) or `fut`'s name and
// `where` (spawn_into). Kept apart from spawn_into_channel: a runtime without channels pays for no
// channel argument.
template <Future F, class Site>
JoinHandle<spawn_output_t<F>> spawn_guarded(RuntimeShared& rt, F&& fut, Site& site) {
  return spawn_as_task(std::forward<F>(fut),
                       [&](TaskPromiseBase& promise, std::coroutine_handle<> frame) {
                         const SpawnSite s = site.hand_over();
                         return spawn_task(rt, promise, frame, s.name, s.where);
                       });
}
template <Future F>
JoinHandle<spawn_output_t<F>> spawn_into(RuntimeShared& rt, F&& fut, SpawnLocation where) {
  auto site = spawn_site(std::forward<F>(fut), where);
  return spawn_guarded(rt, std::forward<F>(fut), site);
}

// Spawns `fut` on `rt` onto `channel` with `deadline` (null: none), recording `site`;
// throws as check_channel does, before `fut` is taken over (a refused spawn leaves it as
// it was).
template <Future F, class Site>
JoinHandle<spawn_output_t<F>> spawn_guarded_into_channel(RuntimeShared& rt, F&& fut,
                                                         ChannelId channel,
                                                         const Deadline* deadline, Site& site) {
  check_channel(rt, channel, deadline != nullptr);
  return spawn_as_task(
      std::forward<F>(fut), [&](TaskPromiseBase& promise, std::coroutine_handle<> frame) {
        const SpawnSite s = site.hand_over();
        return spawn_task_on(rt, promise, frame, channel, deadline, s.name, s.where);
      });
}
// The same, recording `fut`'s name and `where`.
template <Future F>
JoinHandle<spawn_output_t<F>> spawn_into_channel(RuntimeShared& rt, F&& fut, ChannelId channel,
                                                 const Deadline* deadline, SpawnLocation where) {
  auto site = spawn_site(std::forward<F>(fut), where);
  return spawn_guarded_into_channel(rt, std::forward<F>(fut), channel, deadline, site);
}

// The body of spawn_at / spawn_after: waits on the runtime's timers, then runs `inner` in
// place.
template <class T>
Task<T> start_at(Instant when, Task<T> inner) {
  co_await sleep_until(when);
  co_return co_await std::move(inner);
}
// Now on rt's clock (paused, if it is).
SPOOL_API Instant runtime_now(RuntimeShared& rt);
// `delay` from now on rt's clock, saturated: spawn_after(channel, nanoseconds::max(), fut)
// means "never", not a signed overflow.
inline Instant runtime_after(RuntimeShared& rt, std::chrono::nanoseconds delay) {
  return saturating_add(runtime_now(rt), delay);
}
// What Handle::spawn_at and spool::spawn_at share: the channel is checked before `fut` is
// taken over.
template <Future F>
JoinHandle<spawn_output_t<F>> spawn_at_into(RuntimeShared& rt, ChannelId channel, Instant when,
                                            F&& fut, SpawnLocation where) {
  check_channel(rt, channel, false);
  auto site = spawn_site(std::forward<F>(fut), where);  // the name goes to the waiting task
  return spawn_guarded_into_channel(rt, start_at(when, into_task(unnamed(std::forward<F>(fut)))),
                                    channel, nullptr, site);
}

// Runs `fn` on rt's blocking pool (Handle::spawn_blocking), as spawned at `where`.
template <class Fn>
JoinHandle<std::invoke_result_t<Fn&>> spawn_blocking_into(RuntimeShared& rt, Fn&& fn,
                                                          SpawnLocation where) {
  return spawn_as_task(blocking_body(std::forward<Fn>(fn)),
                       [&](TaskPromiseBase& promise, std::coroutine_handle<> frame) {
                         return spawn_blocking_task(rt, promise, frame, where);
                       });
}

// The shared state behind a Runtime or Handle; throws std::logic_error naming `who` when it
// was moved from.
inline RuntimeShared& checked(const std::shared_ptr<RuntimeShared>& rt, const char* who) {
  if (!rt) {
    throw std::logic_error(std::string("spool::") + who +
                           " used after it was moved from: it no longer refers to a runtime; "
                           "use the object it was moved into");
  }
  return *rt;
}
}  // namespace detail

/// Keeps a runtime's shutdown from finishing its drain (docs/levels.md) while held: for work
/// that a complete-on-close channel needs and that runs outside the runtime (an outside
/// thread that will spawn onto the channel or wake one of its tasks). Smartpool's close
/// counter. Taken with Handle::close_guard(); released by release() or the destructor.
/// A guard must be released by a thread other than the one that shuts the runtime down
/// (or before the shutdown): the destructor's shutdown, which has no timeout, would otherwise
/// wait for it for ever; shutdown_timeout reports it as pending instead.
class CloseGuard {
 public:
  /// A guard that holds nothing.
  CloseGuard() noexcept = default;
  /// Releases the guard.
  ~CloseGuard() { release(); }
  /// Takes over `other`'s hold.
  CloseGuard(CloseGuard&& other) noexcept : rt_(std::move(other.rt_)) {}
  /// Releases this guard, then takes over `other`'s hold.
  CloseGuard& operator=(CloseGuard&& other) noexcept {
    if (this != &other) {
      release();
      rt_ = std::move(other.rt_);
    }
    return *this;
  }
  /// Lets the shutdown go on (if this was the last guard and the drained tasks are done).
  void release() noexcept {
    if (rt_) detail::release_close_guard(*std::exchange(rt_, nullptr));
  }
  /// Whether the guard still holds the shutdown.
  bool is_held() const noexcept { return rt_ != nullptr; }

 private:
  friend class Handle;
  explicit CloseGuard(std::shared_ptr<detail::RuntimeShared> rt) noexcept : rt_(std::move(rt)) {
    detail::add_close_guard(*rt_);
  }
  std::shared_ptr<detail::RuntimeShared> rt_;
};

/// A cloneable reference to a runtime, usable from any thread, that spawns onto it.
class Handle {
 public:
  /// The runtime the calling thread runs in: a worker thread, a blocking-pool thread, or a
  /// thread inside Runtime::block_on. Throws std::logic_error outside any runtime.
  static Handle current() {
    auto rt = detail::current_runtime();
    if (!rt) detail::throw_no_current_runtime();
    return Handle(std::move(rt));
  }
  /// Handle::current(), or nullopt outside a runtime.
  static std::optional<Handle> try_current() {
    auto rt = detail::current_runtime();
    if (!rt) return std::nullopt;
    return Handle(std::move(rt));
  }

  /// Spawns `fut` (a Task or any Future, moved in) as a new task; it starts running at
  /// once on the runtime's threads. After shutdown the task is cancelled at once and its
  /// JoinHandle reports it. A Task already polled by hand goes on from where it stopped
  /// (its pending leaf gets the task's waker at the next poll). Throws
  /// std::invalid_argument for an empty or finished Task (which is left as it was).
  /// Spawned from inside a task of this runtime, the new task goes to the spawner's channel
  /// (work a high-priority task spawns stays high-priority); from anywhere else, to the
  /// default channel (Builder::default_channel).
  /// `fut` may be a spool::named future: the task takes its name. `where` is the spawn's call
  /// site, recorded with the task (Runtime::dump); every spawn function takes it, defaulted.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn(
      F&& fut, SpawnLocation where = SpawnLocation::current()) const {
    return detail::spawn_into(rt(), std::forward<F>(fut), where);
  }
  /// Spawns `fut` onto `channel` (see spawn). Throws std::invalid_argument when `channel`
  /// is not one of this runtime's. On an earliest-deadline-first channel the task has no
  /// deadline (it comes after every task that has one).
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_on(
      ChannelId channel, F&& fut, SpawnLocation where = SpawnLocation::current()) const {
    return detail::spawn_into_channel(rt(), std::forward<F>(fut), channel, nullptr, where);
  }
  /// Spawns `fut` onto the earliest-deadline-first `channel` with `deadline`: the channel
  /// runs its tasks earliest deadline first, and counts a task that starts after its deadline
  /// as a miss (ChannelMetrics::deadline_misses). Tasks that the new task spawns with a plain
  /// spawn inherit the channel and the deadline. Throws std::invalid_argument when `channel`
  /// is not one of this runtime's, or not earliest-deadline-first.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_on(
      ChannelId channel, F&& fut, std::chrono::steady_clock::time_point deadline,
      SpawnLocation where = SpawnLocation::current()) const {
    return detail::spawn_into_channel(rt(), std::forward<F>(fut), channel, &deadline, where);
  }
  /// Spawns `fut` onto `channel` to start at `when`, on the runtime's clock (take it from
  /// spool::time::now() inside the runtime when the clock may be paused): the task waits on
  /// the runtime's timers, outside every run queue, and enters its channel when the time
  /// comes (its first poll, at once, only arms the timer). Throws as spawn_on does, before
  /// `fut` is taken over.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_at(
      ChannelId channel, Instant when, F&& fut,
      SpawnLocation where = SpawnLocation::current()) const {
    return detail::spawn_at_into(rt(), channel, when, std::forward<F>(fut), where);
  }
  /// Spawns `fut` onto `channel` to start `delay` from now, on the runtime's clock (a paused
  /// one too). See spawn_at.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_after(
      ChannelId channel, std::chrono::nanoseconds delay, F&& fut,
      SpawnLocation where = SpawnLocation::current()) const {
    return spawn_at(channel, detail::runtime_after(rt(), delay), std::forward<F>(fut), where);
  }
  /// The channel called `name` (Builder::levels; a runtime built without levels has one,
  /// "default"). Throws std::invalid_argument naming the runtime's channels when there is
  /// no such channel.
  ChannelId channel(std::string_view name) const { return detail::runtime_channel(rt(), name); }

  /// Runs `fn()` on the blocking pool (a thread that may block), and gives its result
  /// through the JoinHandle. Queued while all max_blocking_threads are busy. At shutdown,
  /// queued calls are cancelled; running ones finish (bounded by shutdown_timeout).
  /// Throws std::system_error when the pool has no thread and cannot start one.
  template <class Fn>
  JoinHandle<std::invoke_result_t<Fn&>> spawn_blocking(
      Fn&& fn, SpawnLocation where = SpawnLocation::current()) const {
    return detail::spawn_blocking_into(rt(), std::forward<Fn>(fn), where);
  }

  /// Runs `fut` to completion on the calling thread, inside this runtime (see
  /// Runtime::block_on).
  template <Future F>
  future_output_t<std::remove_reference_t<F>> block_on(F&& fut) const {
    rt();  // a moved-from Handle throws here
    detail::RuntimeBlockOn executor(rt_);
    for (;;) {
      auto poll = fut.poll(executor.context());
      if (poll.is_ready()) return std::move(poll).value();
      executor.park();
    }
  }

  /// A CloseGuard on this runtime: its shutdown waits for the guard's release before it
  /// cancels anything (bounded by shutdown_timeout). Taken after the shutdown, it holds
  /// nothing back.
  CloseGuard close_guard() const {
    rt();  // a moved-from Handle throws here
    return CloseGuard(rt_);
  }
  /// A snapshot of the runtime's counters.
  RuntimeMetrics metrics() const { return detail::runtime_metrics(rt()); }
  /// A human-readable list of live tasks: a line each (what tasks() says), followed by the
  /// backtrace of each idle one.
  std::string dump() const { return detail::runtime_dump(rt()); }
  /// Every live task (spawned, not yet finished or cancelled): its id, name, channel, spawn
  /// location, state, counts and, if it is idle, where it waits and how many wakers it has
  /// left (read while the task is held idle: a wake or an abort meanwhile delays its next
  /// poll or its cancel until the read ends, and a runtime thread runs it). In id order (one
  /// thread's spawns in spawn order). Gathered shard by shard, so it is not one instant's
  /// picture; a spawn or completion meanwhile may or may not show.
  std::vector<TaskSnapshot> tasks() const { return detail::runtime_tasks(rt()); }

  // Every member throws std::logic_error on a moved-from Handle.

 private:
  friend class Runtime;
  explicit Handle(std::shared_ptr<detail::RuntimeShared> rt) noexcept : rt_(std::move(rt)) {}
  detail::RuntimeShared& rt() const { return detail::checked(rt_, "Handle"); }

  std::shared_ptr<detail::RuntimeShared> rt_;
};

/// A running runtime: its worker threads (multi-thread) or its queue driven inside
/// block_on (current-thread), its blocking pool, and its tasks. Destroying it shuts it
/// down, in this order: the tasks of complete-on-close channels run to completion and every
/// CloseGuard is released (docs/levels.md; meanwhile a spawn onto another channel is
/// cancelled at once); no new task can be spawned; every task left is cancelled (the
/// destructors of its locals run); the threads are joined; everything is freed.
class Runtime {
 public:
  /// Shuts the runtime down (waiting for running blocking calls without limit).
  ~Runtime() {
    if (rt_) detail::shutdown_runtime(*rt_, std::nullopt, true);
  }
  /// Takes over other's runtime; other is left empty (moved-from: do not use it).
  Runtime(Runtime&&) noexcept = default;
  /// Shuts this runtime down (as the destructor), then takes over other's.
  Runtime& operator=(Runtime&& other) noexcept {
    if (this != &other) {
      if (rt_) detail::shutdown_runtime(*rt_, std::nullopt, true);
      rt_ = std::move(other.rt_);
    }
    return *this;
  }

  /// Runs `fut` to completion on the calling thread while the runtime's tasks run (on the
  /// workers, or on this thread for a current-thread runtime); spool::spawn works inside.
  /// The future's reactor slot holds the runtime's driver (its timers), so a future that
  /// installs another reactor is refused (install_reactor returns false) and must fall back,
  /// as on the runtime's workers; spool::block_on parks in any reactor.
  /// Throws NestedEventLoop on a runtime worker thread or inside another block_on.
  template <Future F>
  future_output_t<std::remove_reference_t<F>> block_on(F&& fut) {
    return handle().block_on(std::forward<F>(fut));
  }

  /// Spawns `fut` onto this runtime. See Handle::spawn.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn(F&& fut,
                                              SpawnLocation where = SpawnLocation::current()) {
    return detail::spawn_into(rt(), std::forward<F>(fut), where);
  }
  /// Spawns `fut` onto `channel`. See Handle::spawn_on.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_on(ChannelId channel, F&& fut,
                                                 SpawnLocation where = SpawnLocation::current()) {
    return detail::spawn_into_channel(rt(), std::forward<F>(fut), channel, nullptr, where);
  }
  /// Spawns `fut` onto the earliest-deadline-first `channel` with `deadline`. See
  /// Handle::spawn_on.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_on(ChannelId channel, F&& fut,
                                                 std::chrono::steady_clock::time_point deadline,
                                                 SpawnLocation where = SpawnLocation::current()) {
    return detail::spawn_into_channel(rt(), std::forward<F>(fut), channel, &deadline, where);
  }
  /// Spawns `fut` onto `channel` to start at `when`. See Handle::spawn_at.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_at(ChannelId channel, Instant when, F&& fut,
                                                 SpawnLocation where = SpawnLocation::current()) {
    return detail::spawn_at_into(rt(), channel, when, std::forward<F>(fut), where);
  }
  /// Spawns `fut` onto `channel` to start `delay` from now. See Handle::spawn_at.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_after(
      ChannelId channel, std::chrono::nanoseconds delay, F&& fut,
      SpawnLocation where = SpawnLocation::current()) {
    return spawn_at(channel, detail::runtime_after(rt(), delay), std::forward<F>(fut), where);
  }
  /// The channel called `name`. See Handle::channel.
  ChannelId channel(std::string_view name) const { return detail::runtime_channel(rt(), name); }

  /// Runs `fn` on the blocking pool. See Handle::spawn_blocking.
  template <class Fn>
  JoinHandle<std::invoke_result_t<Fn&>> spawn_blocking(
      Fn&& fn, SpawnLocation where = SpawnLocation::current()) {
    return detail::spawn_blocking_into(rt(), std::forward<Fn>(fn), where);
  }

  /// A handle to this runtime.
  Handle handle() const {
    detail::checked(rt_, "Runtime");
    return Handle(rt_);
  }

  /// Shuts down as the destructor does, but waits at most `timeout` in all: for the drain
  /// of complete-on-close channels and CloseGuards (the report says what was still pending
  /// when the time ran out; those tasks are then cancelled), and for threads still busy
  /// (blocking-pool calls, or a task stuck in a poll), which are left to finish on their
  /// own. Throws std::logic_error when called from one of the runtime's threads. If the
  /// destructor runs on one of them (the Runtime was owned by a task), the shutdown is
  /// finished on a background thread instead. A later call returns the first one's report.
  /// std::chrono::nanoseconds::max() sets no bound (as the destructor).
  ShutdownReport shutdown_timeout(std::chrono::nanoseconds timeout) {
    return detail::shutdown_runtime(rt(), timeout, false);
  }

  /// A snapshot of the runtime's counters.
  RuntimeMetrics metrics() const { return detail::runtime_metrics(rt()); }
  /// A human-readable list of live tasks and where each waits. See Handle::dump.
  std::string dump() const { return detail::runtime_dump(rt()); }
  /// Every live task, its counts and backtrace. See Handle::tasks.
  std::vector<TaskSnapshot> tasks() const { return detail::runtime_tasks(rt()); }

  // Every member but the destructor and the move assignment throws std::logic_error on a
  // moved-from Runtime.

 private:
  friend class Builder;
  explicit Runtime(std::shared_ptr<detail::RuntimeShared> rt) noexcept : rt_(std::move(rt)) {}
  // The runtime's state, without a Handle's copy of the pointer (two atomic RMWs a spawn).
  detail::RuntimeShared& rt() const { return detail::checked(rt_, "Runtime"); }
  std::shared_ptr<detail::RuntimeShared> rt_;
};

/// Spawns `fut` onto the current runtime (Handle::current().spawn); throws
/// std::logic_error outside a runtime.
template <Future F>
JoinHandle<detail::spawn_output_t<F>> spawn(F&& fut,
                                            SpawnLocation where = SpawnLocation::current()) {
  detail::RuntimeShared* rt = detail::current_runtime_ptr();
  if (rt == nullptr) detail::throw_no_current_runtime();
  return detail::spawn_into(*rt, std::forward<F>(fut), where);
}
/// Spawns `fut` onto `channel` of the current runtime (Handle::current().spawn_on); throws
/// std::logic_error outside a runtime.
template <Future F>
JoinHandle<detail::spawn_output_t<F>> spawn_on(ChannelId channel, F&& fut,
                                               SpawnLocation where = SpawnLocation::current()) {
  detail::RuntimeShared* rt = detail::current_runtime_ptr();
  if (rt == nullptr) detail::throw_no_current_runtime();
  return detail::spawn_into_channel(*rt, std::forward<F>(fut), channel, nullptr, where);
}
/// Spawns `fut` onto `channel` of the current runtime to start at `when`
/// (Handle::current().spawn_at); throws std::logic_error outside a runtime.
template <Future F>
JoinHandle<detail::spawn_output_t<F>> spawn_at(ChannelId channel, Instant when, F&& fut,
                                               SpawnLocation where = SpawnLocation::current()) {
  detail::RuntimeShared* rt = detail::current_runtime_ptr();
  if (rt == nullptr) detail::throw_no_current_runtime();
  return detail::spawn_at_into(*rt, channel, when, std::forward<F>(fut), where);
}
/// Spawns `fut` onto `channel` of the current runtime to start `delay` from now
/// (Handle::current().spawn_after); throws std::logic_error outside a runtime.
template <Future F>
JoinHandle<detail::spawn_output_t<F>> spawn_after(ChannelId channel, std::chrono::nanoseconds delay,
                                                  F&& fut,
                                                  SpawnLocation where = SpawnLocation::current()) {
  detail::RuntimeShared* rt = detail::current_runtime_ptr();
  if (rt == nullptr) detail::throw_no_current_runtime();
  return detail::spawn_at_into(*rt, channel, detail::runtime_after(*rt, delay),
                               std::forward<F>(fut), where);
}
/// Spawns `fut` onto the earliest-deadline-first `channel` of the current runtime with
/// `deadline` (Handle::current().spawn_on); throws std::logic_error outside a runtime.
template <Future F>
JoinHandle<detail::spawn_output_t<F>> spawn_on(ChannelId channel, F&& fut,
                                               std::chrono::steady_clock::time_point deadline,
                                               SpawnLocation where = SpawnLocation::current()) {
  detail::RuntimeShared* rt = detail::current_runtime_ptr();
  if (rt == nullptr) detail::throw_no_current_runtime();
  return detail::spawn_into_channel(*rt, std::forward<F>(fut), channel, &deadline, where);
}

/// Runs `fn` on the current runtime's blocking pool. See Handle::spawn_blocking.
template <class Fn>
JoinHandle<std::invoke_result_t<Fn&>> spawn_blocking(
    Fn&& fn, SpawnLocation where = SpawnLocation::current()) {
  return Handle::current().spawn_blocking(std::forward<Fn>(fn), where);
}

/// Runs `fn()` on the current worker thread, which may block inside it: the worker first
/// hands its queue of tasks to a new thread, so the other tasks keep running. Outside any
/// runtime it just calls fn. Throws std::logic_error on a current-thread runtime (its one
/// thread cannot be handed over). `fn` may call Handle::block_on or spool::block_on, as a
/// spawn_blocking call may; only when no thread could take the queue (the blocking pool is
/// full) does the worker block with it, and a block_on inside then throws NestedEventLoop.
template <class Fn>
std::invoke_result_t<Fn&> block_in_place(Fn&& fn) {
  using R = std::invoke_result_t<Fn&>;
  if constexpr (std::is_void_v<R>) {
    detail::block_in_place_impl([&] { fn(); });
  } else {
    std::optional<R> result;
    detail::block_in_place_impl([&] { result.emplace(fn()); });
    return std::move(*result);
  }
}

}  // namespace spool

// Builder, which builds a Runtime, has its own header; it comes with this one.
#include "spool/builder.hpp"  // IWYU pragma: export
