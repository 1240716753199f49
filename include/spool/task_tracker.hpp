// spool::TaskTracker: counts tasks that are still running, so a shutdown can wait for all of
// them (tokio-util's TaskTracker); with CancellationToken, the graceful-shutdown recipe.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/join_handle.hpp"
#include "spool/runtime.hpp"
#include "spool/sync/notify.hpp"

namespace spool {

namespace detail {
// What a TaskTracker's copies, tokens and wait futures share.
struct TrackerState {
  // kClosed: close() was called (reopen() clears it).
  static constexpr std::size_t kClosed = 1;
  // One live token adds kToken.
  static constexpr std::size_t kToken = 2;

  // (live tokens * kToken) | kClosed. A token's drop subtracts kToken with acq_rel: release
  // publishes the tracked task's work, acquire lets the drop that leaves the tracker empty
  // carry every earlier drop's work to the waiters it notifies; a token's creation adds
  // kToken (relaxed: nothing to publish); close() / reopen() set / clear kClosed with acq_rel.
  // TaskTrackerWait loads it with acquire (pairs with those releases).
  Atomic<std::size_t> state{0};
  // Woken (notify_waiters) each time the tracker becomes closed and empty: by the token drop
  // that empties a closed tracker, or by the close() of an empty one.
  Notify became_idle;

  void release_token() noexcept {
    if (state.fetch_sub(kToken, std::memory_order_acq_rel) == (kToken | kClosed)) {
      became_idle.notify_waiters();
    }
  }
};
}  // namespace detail

/// One tracked task's share of a TaskTracker: the tracker counts it as a running task until
/// the token is destroyed or release()d. Move only; a moved-from or released token counts
/// for nothing. TaskTracker::track and spawn hold one per task; make one with
/// TaskTracker::token() to count work of your own. Thread-safe to destroy on any thread.
class TaskTrackerToken {
 public:
  /// Takes `o`'s share; `o` counts for nothing afterwards.
  TaskTrackerToken(TaskTrackerToken&& o) noexcept : state_(std::move(o.state_)) {}
  /// Releases this share, then takes `o`'s.
  TaskTrackerToken& operator=(TaskTrackerToken&& o) noexcept {
    if (this != &o) {
      release();
      state_ = std::move(o.state_);
    }
    return *this;
  }
  /// Releases the share (see release()).
  ~TaskTrackerToken() { release(); }

  /// Stops counting: if the tracker is closed and this was its last task, its wait()
  /// futures complete. No-op when already released.
  void release() noexcept {
    if (state_) std::exchange(state_, nullptr)->release_token();
  }

 private:
  friend class TaskTracker;
  explicit TaskTrackerToken(std::shared_ptr<detail::TrackerState> state) noexcept
      : state_(std::move(state)) {
    state_->state.fetch_add(detail::TrackerState::kToken, std::memory_order_relaxed);
  }
  std::shared_ptr<detail::TrackerState> state_;
};

/// A future tracked by a TaskTracker (TaskTracker::track): polls `F` and gives its output;
/// it counts as a running task until it completes (returns its output or throws) or is
/// destroyed. On completion it destroys `F` first, then releases its token, so whatever `F`
/// holds is gone before the tracker's wait() completes — even while the task's JoinHandle
/// still holds the output. (Spawned, it is released inside the task's last poll: wait() may
/// complete an instant before the JoinHandle's is_finished() turns true.) Movable until
/// first polled (as F).
template <Future F>
class TrackedFuture {
 public:
  /// What F produces.
  using Output = future_output_t<F>;

  /// F's poll; on completion, destroys F and releases the token. Throws std::logic_error
  /// when polled again after it completed.
  Poll<Output> poll(Context& cx) {
    if (!fut_) throw std::logic_error("spool::TrackedFuture polled after it completed");
    struct FinishIfDone {  // destroys F and lets go of the token, unless F is pending
      TrackedFuture* self;
      bool done = true;
      ~FinishIfDone() {
        if (done) {
          self->fut_.reset();
          self->token_.release();
        }
      }
    } finish{this};
    Poll<Output> p = fut_->poll(cx);
    finish.done = p.is_ready();
    return p;
  }

 private:
  friend class TaskTracker;
  TrackedFuture(F fut, TaskTrackerToken token)
      : token_(std::move(token)), fut_(std::in_place, std::move(fut)) {}
  TaskTrackerToken token_;  // released after fut_ is destroyed (members go in reverse)
  std::optional<F> fut_;
};

/// The future of TaskTracker::wait(): ready once the tracker is closed and no tracked task
/// is left — checked at every poll, and also ready if the tracker was closed and empty at
/// any moment since wait() was called (its creation included), even if it was reopened or
/// tracked a new task since (tokio's semantics). Tasks tracked while it waits are waited for
/// too. It shares the tracker's state, so it may outlive every TaskTracker copy. Movable
/// until first polled; moving it while it waits throws std::logic_error. Cancellation loses
/// nothing.
class TaskTrackerWait {
 public:
  /// Ready once closed and empty (see the class); pending, keeping the latest waker, else.
  /// Throws std::logic_error on a moved-from future.
  Poll<void> poll(Context& cx) {
    if (!state_) {
      throw std::logic_error(
          "spool::TaskTrackerWait polled after it was moved from: poll the future it was "
          "moved to");
    }
    if (ready_ || is_idle(*state_)) return Poll<void>::ready();
    return became_idle_.poll(cx);
  }

 private:
  friend class TaskTracker;
  explicit TaskTrackerWait(std::shared_ptr<detail::TrackerState> state) noexcept
      : state_(std::move(state)),
        became_idle_(state_->became_idle.notified()),
        ready_(is_idle(*state_)) {}
  // Closed and empty now. Acquire: pairs with the release of the drop or close() that made
  // it so, whose work the waiter may then read.
  static bool is_idle(const detail::TrackerState& s) noexcept {
    return s.state.load(std::memory_order_acquire) == detail::TrackerState::kClosed;
  }
  std::shared_ptr<detail::TrackerState> state_;
  // Made before the first look at the state: a notify_waiters after wait() completes it.
  Notified became_idle_;
  // Closed and empty when wait() was called (a notify_waiters before it is not seen).
  bool ready_;
};

/// Tracks tasks so that a shutdown can wait for them: `spawn` (or `track` a future and
/// spawn it yourself), then `close()` and `co_await wait()`, which completes once the
/// tracker is closed and every tracked task has finished. Unlike a JoinSet it keeps no
/// handle and no output: a finished task is forgotten at once, so a server may track
/// millions of connections over its life. Closing does not stop tracking: a task spawned
/// after close() is tracked and waited for too (close() only allows wait() to complete).
/// Copies share one tracker (as a shared_ptr); it has no move, so a moved-from tracker is a
/// copy that still works. Thread-safe; wait() works under any executor.
///
/// Graceful shutdown (docs/sync.md): give every task a CancellationToken, spawn them through
/// the tracker; to stop, `token.cancel(); tracker.close(); co_await tracker.wait();`.
class TaskTracker {
 public:
  /// An open tracker with no task.
  TaskTracker() : state_(std::make_shared<detail::TrackerState>()) {}
  /// Another handle to the same tracker. Declared so that a move copies: no TaskTracker is
  /// ever left without its state.
  TaskTracker(const TaskTracker&) = default;
  /// Makes this a handle to `o`'s tracker (a move does the same).
  TaskTracker& operator=(const TaskTracker&) = default;
  /// Drops this handle; the tracker lives on in its copies, tokens and wait futures.
  ~TaskTracker() = default;

  /// Wraps `fut` so that it counts as a running task until it completes or is destroyed
  /// (see TrackedFuture). Spawn it, or await it, as any future.
  template <Future F>
  [[nodiscard]] TrackedFuture<std::remove_cvref_t<F>> track(F&& fut) const {
    return TrackedFuture<std::remove_cvref_t<F>>(std::forward<F>(fut), token());
  }
  /// Spawns `fut`, tracked, on the current runtime (spool::spawn; throws std::logic_error
  /// outside a runtime). The JoinHandle works as spawn's; the tracker counts the task until
  /// it finishes or is cancelled, not until the handle gives its output. Cost: a TrackedFuture
  /// is no Task, so the spawn wraps it in a Task frame of its own: a Task spawned through
  /// the tracker takes two frames (two allocations) and every poll one more hop, where a
  /// plain spawn takes one (avoiding that needs a completion hook in the task; not done).
  /// A spool::named future keeps its name (the tracked future is named instead); `where` is
  /// the call site the task records.
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn(
      F&& fut, SpawnLocation where = SpawnLocation::current()) const {
    return spool::spawn(track_for_spawn(std::forward<F>(fut)), where);
  }
  /// Spawns `fut`, tracked, onto `channel` of the current runtime (spool::spawn_on; throws
  /// as it does).
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_on(
      ChannelId channel, F&& fut, SpawnLocation where = SpawnLocation::current()) const {
    return spool::spawn_on(channel, track_for_spawn(std::forward<F>(fut)), where);
  }
  /// Spawns `fut`, tracked, on `handle`'s runtime (Handle::spawn). (Not spawn_on, which
  /// names a priority channel, as everywhere in spool.)
  template <Future F>
  JoinHandle<detail::spawn_output_t<F>> spawn_with(
      const Handle& handle, F&& fut, SpawnLocation where = SpawnLocation::current()) const {
    return handle.spawn(track_for_spawn(std::forward<F>(fut)), where);
  }
  /// A token that counts as one running task until it is destroyed or released.
  [[nodiscard]] TaskTrackerToken token() const { return TaskTrackerToken(state_); }

  /// Closes the tracker: wait() may complete from now on (at once, if no task is tracked).
  /// True if this call closed it, false if it was closed already.
  bool close() const {
    const std::size_t prev =
        state_->state.fetch_or(detail::TrackerState::kClosed, std::memory_order_acq_rel);
    if (prev == 0) state_->became_idle.notify_waiters();  // open and empty: idle now
    return (prev & detail::TrackerState::kClosed) == 0;
  }
  /// Opens a closed tracker again: wait() futures made from now on wait for the next
  /// close(). True if this call reopened it, false if it was open.
  bool reopen() const {
    const std::size_t prev =
        state_->state.fetch_and(~detail::TrackerState::kClosed, std::memory_order_acq_rel);
    return (prev & detail::TrackerState::kClosed) != 0;
  }
  /// True while the tracker is closed.
  bool is_closed() const noexcept {
    return (state_->state.load(std::memory_order_acquire) & detail::TrackerState::kClosed) != 0;
  }
  /// The number of tracked tasks (and tokens) still running.
  std::size_t len() const noexcept {
    return state_->state.load(std::memory_order_acquire) / detail::TrackerState::kToken;
  }
  /// True when no tracked task is running.
  bool is_empty() const noexcept { return len() == 0; }

  /// A future that completes once the tracker is closed and no tracked task is left (see
  /// TaskTrackerWait).
  [[nodiscard]] TaskTrackerWait wait() const { return TaskTrackerWait(state_); }

 private:
  // track(fut), named as `fut` is when it is a spool::named future.
  template <Future F>
  auto track_for_spawn(F&& fut) const {
    if constexpr (detail::is_named_v<std::remove_cvref_t<F>>) {
      auto tracked = track(detail::unnamed(std::forward<F>(fut)));
      if constexpr (std::is_lvalue_reference_v<F>) {
        return named(fut.name(), std::move(tracked));
      } else {
        return named(std::move(fut).take_name(), std::move(tracked));
      }
    } else {
      return track(std::forward<F>(fut));
    }
  }

  std::shared_ptr<detail::TrackerState> state_;
};

}  // namespace spool
