// spool::scope: structured concurrency — spawned tasks that may borrow from the awaiting
// coroutine's frame, because the scope does not finish until every one of them has.
#pragma once

#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/child_set.hpp"
#include "spool/detail/task_locals.hpp"
#include "spool/join_handle.hpp"
#include "spool/runtime.hpp"

namespace spool {

class Scope;

namespace detail {

// A scoped child as its runtime task holds it: the child's own Task and its slot in the
// scope. exit() — or the destructor, for a child cancelled before or while it ran —
// destroys the child's Task first and only then counts the child out of the scope, so the
// scope never lets its awaiter go on while a child's frame (and what it borrows) exists.
class SPOOL_API ScopeChild {
 public:
  ScopeChild(Scope& scope, std::size_t slot, Task<void> task, const TaskLocalNode* locals) noexcept
      : scope_(&scope), slot_(slot), task_(std::move(task)), locals_(locals) {}
  ScopeChild(ScopeChild&& other) noexcept
      : scope_(std::exchange(other.scope_, nullptr)),
        slot_(other.slot_),
        task_(std::move(other.task_)),
        locals_(other.locals_) {}
  ScopeChild& operator=(ScopeChild&&) = delete;
  ~ScopeChild() { exit(nullptr); }

  Task<void>& task() noexcept { return task_; }
  // The task-local values where its scope was first polled (null: none).
  const TaskLocalNode* locals() const noexcept { return locals_; }
  // Destroys the child's Task, then tells the scope that the child is gone, with the
  // exception it threw (or null). Once: later calls, and a moved-from child, do nothing.
  void exit(std::exception_ptr error) noexcept;

 private:
  Scope* scope_;  // null once exited or moved from
  std::size_t slot_;
  Task<void> task_;
  const TaskLocalNode* locals_;
};

// The runtime task of a scoped child: runs the child's Task, then exits it with the
// exception it threw, if any.
SPOOL_API Task<void> run_scope_child(ScopeChild child);

}  // namespace detail

/// What the body of spool::scope receives: spawns the scope's children. Every child runs
/// as a runtime task (in parallel with the body and the other children on a multi-thread
/// runtime), and the scope's future does not finish until every child has finished or been
/// cancelled and destroyed — so a child may borrow what outlives the `co_await
/// spool::scope(...)`: the awaiting coroutine's locals and the body lambda's captures (not
/// the body's own locals, which are gone once the body returns). Thread-safe: children may
/// spawn more children into the same scope from any thread. Neither copyable nor movable;
/// valid while the scope's future exists (see spool::scope).
class SPOOL_API Scope {
 public:
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  /// Spawns `fut` (a Task<void> or any Future producing void, moved in) on the current
  /// runtime as a child of this scope. Once a child or the body threw, the scope is
  /// cancelling: `fut` is then destroyed without running. Throws std::logic_error outside a
  /// runtime (a child is a runtime task), and after the scope's future finished (a Scope&
  /// that escaped its body).
  template <Future F>
  requires std::is_void_v<detail::spawn_output_t<F>>
  void spawn(F&& fut, SpawnLocation where = SpawnLocation::current()) {
    detail::RuntimeShared& rt = runtime_for_spawn();
    auto site = detail::spawn_site(std::forward<F>(fut), where);
    Task<void> task = detail::into_task(detail::unnamed(std::forward<F>(fut)));
    const std::size_t slot = reserve();
    if (slot == kNoSlot) return;  // cancelling: `task` is destroyed unrun
    try {
      attach(slot, detail::spawn_guarded(rt,
                                         detail::run_scope_child(detail::ScopeChild(
                                             *this, slot, std::move(task), locals_)),
                                         site));
    } catch (...) {
      abandon(slot);  // the child was destroyed with the unwinding, and has exited
      throw;
    }
  }

 private:
  template <class Body>
  friend class ScopeFuture;
  friend class detail::ScopeChild;

  // The scope's life: kOpen (children are spawned) → kCancelling (an exception was
  // recorded: every child is aborted, spawn drops its future) → kFinished (the future gave
  // its result or threw: spawn throws). kClosed: the future is destroyed before it
  // finished — every child is cancelled at once and waited for, spawn drops its future.
  enum class Phase { kOpen, kCancelling, kFinished, kClosed };
  // One child's place: its JoinHandle once its spawner attached it (kept to cancel it), and
  // whether it exited before that (then the spawner frees the slot).
  struct Slot {
    std::optional<JoinHandle<void>> handle;
    bool exited = false;
  };
  static constexpr std::size_t kNoSlot = static_cast<std::size_t>(-1);

  Scope() = default;
  ~Scope() = default;  // close() ran first (the future's destructor)

  // The current runtime; throws std::logic_error outside one.
  static detail::RuntimeShared& runtime_for_spawn();
  // A slot for a new child, which counts as live from now on; kNoSlot while cancelling or
  // closed; throws std::logic_error once finished.
  std::size_t reserve();
  // Gives the spawned child's handle to its slot (aborting or cancelling it if the scope is
  // cancelling or closed meanwhile), or frees the slot if the child exited already.
  void attach(std::size_t slot, JoinHandle<void> handle) noexcept;
  // Frees the slot of a child whose spawn threw (it was destroyed, and exited).
  void abandon(std::size_t slot) noexcept;
  // A child is gone (ScopeChild::exit): records its exception if it is the first, wakes the
  // future when there is something new for it to see.
  void child_exited(std::size_t slot, std::exception_ptr error) noexcept;
  // The body threw: records the exception if it is the first, and cancels the children.
  void fail(std::exception_ptr error) noexcept;
  // The future finishes if no child is left (later spawns throw) and returns the first
  // exception (null if none); nullopt if a child was spawned since the last watch() (the
  // future waits on, its waker kept).
  std::optional<std::exception_ptr> try_finish() noexcept;
  // The future is destroyed: cancels every child at once (a child being polled elsewhere at
  // the end of that poll) and blocks until none is left.
  void close() noexcept;
  // With children_.lock() held: enters kCancelling and aborts every attached child.
  void cancel_locked() noexcept;

  // Every reserved slot is a child it expects; its waiter is the future's, or close()'s. Its
  // lock guards the rest:
  detail::ChildSet children_;
  // The task-local values where the future was first polled, for the children: written by
  // that poll before the body runs, so before any spawn reads it.
  const detail::TaskLocalNode* locals_ = nullptr;
  Phase phase_ = Phase::kOpen;
  std::vector<Slot> slots_;
  std::vector<std::size_t> free_;  // slots to reuse; has room for every slot (no throw)
};

/// The future of spool::scope: polls the body, then waits for every child of the scope.
/// Ready with the body's output once the body and every child finished. The first exception
/// — the body's, or any child's — cancels the other children (aborted: a worker destroys
/// an idle one, a running one goes at the end of its poll) and stops polling the body, waits until
/// every child is gone, destroys the body, then is rethrown; later exceptions are dropped.
/// Destroying the future before it finished (the awaiting task was cancelled) cancels every child
/// on the spot — a child that another thread is polling is waited for until that poll ends — and
/// returns only once none is left. Polling it again once it finished throws
/// std::logic_error. Movable at any time (its state is on the heap); one poller at a time.
template <class Body>
class [[nodiscard]] ScopeFuture {
  using BodyFuture = std::invoke_result_t<Body&, Scope&>;

 public:
  /// The body's output.
  using Output = future_output_t<BodyFuture>;

  /// A scope running `body` (see spool::scope); nothing runs before the first poll.
  explicit ScopeFuture(Body body) : block_(std::make_unique<Block>(std::move(body))) {}

  /// Polls the body until it finishes, then waits for the children (see the class).
  Poll<Output> poll(Context& cx) {
    if (!block_) throw std::logic_error("spool::ScopeFuture polled after it was moved from");
    return block_->poll(cx);
  }

 private:
  // For async backtraces (detail::BranchAccess): the body's chain goes on into the Task that
  // awaits the scope, and a backtrace of that Task's chain lists the body as branch 0 (the
  // children are tasks of their own).
  friend struct detail::BranchAccess;
  using spool_detail_branch_hooks = void;
  void link_awaiting(const detail::TaskPromiseBase* awaiting) noexcept {
    if (block_) block_->awaiting = awaiting;
  }
  void branch_backtraces(Backtrace& bt) const {
    if (block_ && block_->running && !block_->body_stopped) {
      detail::BranchAccess::describe(*block_->running, 0, bt);
    }
  }

  struct Block {
    explicit Block(Body b) : body(std::move(b)) {}
    // Every child goes first: they may borrow the body's captures and, when cancelled, its
    // locals.
    ~Block() { scope.close(); }

    Poll<Output> poll(Context& cx) {
      if (finished) {
        throw std::logic_error(
            "spool::scope's future polled again after it completed (or threw): a future must "
            "not be polled after it returned ready");
      }
      // Children read the chain of the first poll, which may be gone by now (as a join's).
      if (running && scope.locals_ != detail::current_task_locals()) {
        throw std::logic_error(
            "spool::scope polled under other TaskLocal scopes than at its first poll: its "
            "children see the scopes of the first poll; poll it always from the same place "
            "(co_await it where it was first polled)");
      }
      // Once the body stopped, the last child's exit wakes the future.
      detail::ChildSet::Seen seen = scope.children_.watch(cx.waker(), body_stopped);
      if (!body_stopped && !seen.failed) {
        try {
          if (!running) {
            scope.locals_ = detail::current_task_locals();
            running.emplace(std::invoke(body, scope));
          }
          if (poll_into_result(cx)) body_stopped = true;
        } catch (...) {
          scope.fail(std::current_exception());
          body_stopped = true;
        }
        if (!body_stopped) return pending;
        seen = scope.children_.watch(cx.waker(), true);  // now only the children are waited for
      }
      if (!seen.all_exited) return pending;
      // A child spawned since the look (through a Scope& that escaped) is waited for too.
      std::optional<std::exception_ptr> error = scope.try_finish();
      if (!error) return pending;
      finished = true;
      running.reset();  // a body stopped by a child's exception still had its locals
      if (*error) std::rethrow_exception(*error);
      return std::move(*result);
    }

    bool poll_into_result(Context& cx) {
      auto keep = [this](auto&&... v) {
        result.emplace(Poll<Output>::ready(std::forward<decltype(v)>(v)...));
      };
      return detail::poll_child(*running, keep, cx, awaiting);
    }

    Scope scope;
    Body body;
    std::optional<BodyFuture> running;                  // the body's future, from the first poll
    std::optional<Poll<Output>> result;                 // the body's output, once it is ready
    bool body_stopped = false;                          // the body finished or threw
    bool finished = false;                              // the future gave its result or threw
    const detail::TaskPromiseBase* awaiting = nullptr;  // the Task that awaits the scope
  };

  std::unique_ptr<Block> block_;  // null once moved from
};

/// Structured concurrency: `co_await spool::scope([&](spool::Scope& s) -> spool::Task<R> {
/// s.spawn(child); ...; co_return r; })` runs the body, whose children (Scope::spawn) may
/// borrow the awaiting coroutine's locals, and gives the body's `R` once the body and every
/// child finished. See ScopeFuture for exceptions and cancellation, and docs/scope.md.
/// `body` is moved (or copied) into the future and called once, at its first poll, with
/// the Scope; it returns any Future (typically a Task). The future works under any
/// executor; only spawning needs a current runtime.
template <class Body>
requires std::invocable < std::decay_t<Body>
&, Scope& > &&Future<std::invoke_result_t<std::decay_t<Body>&, Scope&>>
                ScopeFuture<std::decay_t<Body>> scope(Body&& body) {
  return ScopeFuture<std::decay_t<Body>>(std::forward<Body>(body));
}

}  // namespace spool
