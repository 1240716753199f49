// The machinery behind spool::join, join_all and ForkGroup (spool/fork.hpp): the children,
// what a join asks of the thread it is polled on, its rare path (stolen children, the
// first exception), and the poll they share. See docs/fork.md.
#pragma once

#include <array>
#include <cassert>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/built_once.hpp"
#include "spool/detail/child_set.hpp"
#include "spool/detail/fork_deque.hpp"
#include "spool/detail/fork_item.hpp"
#include "spool/detail/task_locals.hpp"
#include "spool/join_handle.hpp"
#include "spool/runtime.hpp"

namespace spool {
namespace detail {

// fork_site's cases other than a worker of a runtime without levels (src/runtime/fork.cpp).
SPOOL_API void fork_site_elsewhere(ForkSite& site) noexcept;
// Writes every field of `site`, the current thread's: a multi-thread worker holding its
// core gives its deque; a thread of a multi-thread runtime without a core (block_on,
// blocking pool) gives spawn_others; anything else gives nothing (the children run
// inline, one by one). (Written in place, field by field: a ForkSite returned by value was
// copied with one wide load of narrower stores, a store-forwarding stall that cost W11 4 ns
// a join.)
inline void fork_site(ForkSite& site) noexcept {
  ForkDeque* const deque = this_thread_forks;
  if (deque == nullptr || deque->inherit_channel()) {
    fork_site_elsewhere(site);
    return;
  }
  site.deque = deque;
  site.spills = deque->spills();
  site.runtime = deque->runtime();
  site.parent = nullptr;  // without levels, a stolen child inherits nothing
  site.spawn_others = false;
}
// Spawns a stolen child's task on `rt`, as a spawn from `parent` (may be null) would.
SPOOL_API TaskHeader* spawn_fork_task(RuntimeShared& rt, TaskPromiseBase& promise,
                                      std::coroutine_handle<> frame, const TaskHeader* parent);

// Where a child of a join is.
enum class ForkState : std::uint8_t {
  kFresh,    // not started, runs inline when the join reaches it
  kQueued,   // in the fork deque, until the join pops it (then kFresh) or a thief takes it
  kPending,  // polled inline, pending
  kDone,     // finished inline (its value stored), threw, or was cancelled
  kRemote,   // taken from the deque: runs as a task of its own (ForkRemote counts it)
};

struct ForkShared;
struct ForkChildBase;

// What the join does with a child, whatever its type (one static table per type).
struct ForkChildOps : ForkItemOps {
  // Polls the child's Task with `cx`, its backtrace going on into `awaiting` (the coroutine
  // that awaits the join, or null); true once it finished (its value stored). Throws what
  // the child threw.
  bool (*poll_inline)(ForkChildBase& self, Context& cx, const TaskPromiseBase* awaiting);
  // Destroys the child's Task (cancelled: it will not run on).
  void (*drop_task)(ForkChildBase& self) noexcept;
};

// What the join needs of a child, whatever its type. Only what an unstolen child needs: a
// stolen one's books are in its RemoteRecord.
struct ForkChildBase : ForkItem {
  ForkShared* shared = nullptr;         // set by the join's first poll, before the child is offered
  ForkState state = ForkState::kFresh;  // the join's own (never read by a thief)

  // ForkChildOps::poll_inline and drop_task.
  bool poll_inline(Context& cx, const TaskPromiseBase* awaiting) {
    return static_cast<const ForkChildOps*>(ops)->poll_inline(*this, cx, awaiting);
  }
  void drop_task() noexcept { static_cast<const ForkChildOps*>(ops)->drop_task(*this); }
};

// A stolen child's books, made by the thread that took it and kept by its join's
// ForkRemote (under its children.lock()) until the join goes.
struct RemoteRecord {
  bool half_exited = false;              // its task's start or end was counted already
  bool ended_without_value = false;      // its task ended first, cancelled (see exited())
  std::optional<JoinHandle<void>> task;  // its task once started, to cancel it
  RemoteRecord* next = nullptr;          // ForkRemote's list of records
};

// The children of one join that run as tasks of their own: their books (the ChildSet, whose
// lock guards the rest), and the list of their tasks, to cancel them. Built when a child is
// first stolen or something fails (ForkShared): the rare path. Implemented in
// src/runtime/fork.cpp.
class SPOOL_API ForkRemote {
 public:
  ForkRemote() = default;
  ForkRemote(const ForkRemote&) = delete;
  ForkRemote& operator=(const ForkRemote&) = delete;
  // Every stolen child was counted out (the join waited): no one else touches the records.
  ~ForkRemote() {
    if (records_ != nullptr) free_records();
  }

  // Counts a stolen child out once both started() and exited() were called for it.
  ChildSet children;

  // A stolen child's task was spawned (`task`), or could not be (nullopt; `error`). A null
  // `record` (no memory for it; `error` says so) means no task either: the child is out.
  void started(RemoteRecord* record, std::optional<JoinHandle<void>> task,
               std::exception_ptr error) noexcept;
  // A stolen child's task ends: its value stored (`produced`), its exception, or neither
  // (cancelled). Wakes the join if this was the last child it waits for.
  void exited(RemoteRecord& record, std::exception_ptr error, bool produced) noexcept;
  // Cancels every stolen child: those started now, the others as they start.
  void cancel() noexcept;
  // cancel(), then blocks until `expected` stolen children were counted out (the join is
  // destroyed before it finished, and they may borrow what it is about to free).
  void cancel_and_wait(std::size_t expected) noexcept;

 private:
  void free_records() noexcept;

  // Guarded by children.lock():
  bool cancelled_ = false;
  RemoteRecord* records_ = nullptr;  // every record started() took; links never change
};

// What a join shares with the threads that take its children: where it is polled, and the
// books of its stolen children, built by whichever thread needs them first (a thief, or
// the join on a failed pop or an exception). A join whose children all run here never
// builds them.
struct ForkShared {
  // Written by the join's first poll before any child is offered (never, if it offers
  // none); read by the thread that runs a child remotely (ordered by the deque's protocol,
  // or by the spawn).
  ForkSite site;
  // The task-local values where the join was first polled, for its stolen children (the
  // unstolen ones run inside the join's poll); written and read as `site` is.
  const TaskLocalNode* locals = nullptr;
  BuiltOnce<ForkRemote> remote;
};

// `fut` as a child's Task: itself when it is one (no move: the child takes it over in
// place), else a Task made of it.
template <class F>
decltype(auto) as_child_task(F&& fut) {
  if constexpr (is_task_v<std::remove_cvref_t<F>>) {
    return static_cast<F&&>(fut);
  } else {
    return into_task(std::forward<F>(fut));
  }
}

// The value a child of type T gives (void: std::monostate).
template <class T>
using ForkValue = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

// Polls `task` with `cx`, its backtrace going on into `awaiting` (the coroutine that awaits
// the join, or null); stores its value in `value` once it finished.
template <class T>
bool poll_fork_task(Task<T>& task, std::optional<ForkValue<T>>& value, Context& cx,
                    const TaskPromiseBase* awaiting) {
  return poll_task_into(
      task, [&value](auto&&... v) { value.emplace(std::forward<decltype(v)>(v)...); }, cx,
      awaiting);
}

template <class T>
struct ForkChild;

// The Task of a stolen child while it runs remotely, and its end: exit() (at the end of
// the task's body, or when its frame is destroyed before: cancelled) destroys the child's
// frame first (what that frame borrows must outlive it), then counts the child out of its
// join. (Not left to the frame's destruction alone: a finished task's frame lives as long
// as its JoinHandle, which the join keeps.)
template <class T>
class RemoteChild {
 public:
  RemoteChild(ForkChild<T>& child, RemoteRecord& record, Task<T> task) noexcept
      : child_(&child), record_(&record), task_(std::move(task)) {}
  RemoteChild(RemoteChild&& other) noexcept
      : child_(std::exchange(other.child_, nullptr)),
        record_(other.record_),
        task_(std::move(other.task_)),
        error_(std::move(other.error_)),
        produced_(other.produced_) {}
  RemoteChild& operator=(RemoteChild&&) = delete;
  ~RemoteChild() { exit(); }

  // A future that runs the child to its end and stores its value.
  auto run() noexcept { return Run{this}; }
  void fail(std::exception_ptr error) noexcept { error_ = std::move(error); }
  // Once: later calls, and a moved-from RemoteChild, do nothing.
  void exit() noexcept {
    if (child_ == nullptr) return;
    task_ = Task<T>();
    ForkChild<T>* c = std::exchange(child_, nullptr);
    c->shared->remote.get().exited(*record_, std::move(error_), produced_);
  }

 private:
  struct Run {
    RemoteChild* self;
    Poll<void> poll(Context& cx) {
      TaskLocalsInstalled installed(self->child_->shared->locals);
      if (!poll_fork_task(self->task_, self->child_->value, cx, nullptr)) return pending;
      self->produced_ = true;
      return Poll<void>::ready();
    }
  };

  ForkChild<T>* child_;  // null once moved from
  RemoteRecord* record_;
  Task<T> task_;
  std::exception_ptr error_;
  bool produced_ = false;
};

// A stolen child's runtime task.
template <class T>
Task<void> run_remote_child(RemoteChild<T> child) {
  try {
    co_await child.run();
  } catch (...) {
    child.fail(std::current_exception());
  }
  child.exit();
}

// One child of a join: its Task, then its value.
template <class T>
struct ForkChild final : ForkChildBase {
  static_assert(!std::is_reference_v<T>,
                "spool::join: a child Task<T&> gives a reference; join Tasks that give a value "
                "(a pointer or std::reference_wrapper)");
  explicit ForkChild(Task<T>&& t) noexcept : ForkChildBase{{&kOps}}, task(std::move(t)) {}

  Task<T> task;  // empty once it ran remotely
  std::optional<ForkValue<T>> value;

 private:
  static void run_remote_fn(ForkItem* item) noexcept {
    auto& c = static_cast<ForkChild&>(*item);
    ForkShared& j = *c.shared;
    ForkRemote& r = j.remote.get();
    std::optional<JoinHandle<void>> handle;
    std::exception_ptr error;
    RemoteRecord* record = new (std::nothrow) RemoteRecord;
    if (record == nullptr) {
      c.task = Task<T>();  // its frame goes before the child is counted out
      error = std::make_exception_ptr(std::bad_alloc());
    } else {
      try {
        handle.emplace(
            spawn_as_task(run_remote_child<T>(RemoteChild<T>(c, *record, std::move(c.task))),
                          [&j](TaskPromiseBase& promise, std::coroutine_handle<> frame) {
                            return spawn_fork_task(*j.site.runtime, promise, frame, j.site.parent);
                          }));
      } catch (...) {
        error = std::current_exception();  // no memory for the task (its child exited)
      }
    }
    r.started(record, std::move(handle), std::move(error));
  }
  static bool poll_inline_fn(ForkChildBase& self, Context& cx, const TaskPromiseBase* awaiting) {
    auto& c = static_cast<ForkChild&>(self);
    return poll_fork_task(c.task, c.value, cx, awaiting);
  }
  static void drop_task_fn(ForkChildBase& self) noexcept {
    static_cast<ForkChild&>(self).task = Task<T>();
  }
  static constexpr ForkChildOps kOps{{&run_remote_fn}, &poll_inline_fn, &drop_task_fn};
};

// What join and join_all share: offering the children, running them, waiting for the
// stolen ones. Must not move once polled (the children's addresses are in deques).
class ForkJoinCore {
 public:
  ForkJoinCore() = default;
  ForkJoinCore(const ForkJoinCore&) = delete;
  ForkJoinCore& operator=(const ForkJoinCore&) = delete;
  // Throws std::logic_error once the join was polled: its children's addresses are in use.
  void check_movable() const {
    if (started_) {
      throw std::logic_error(
          "spool::join: a join future was moved after it was first polled (its children may "
          "be running elsewhere); move it only before, or co_await it in place");
    }
  }
  ~ForkJoinCore() { settle(); }
  // The coroutine that awaits the join (or null), where the backtraces of the children it
  // polls go on. Not a stolen child's: it runs on another thread meanwhile, where that
  // coroutine's chain may change or go, so its own chain ends at itself.
  void link_awaiting(const TaskPromiseBase* awaiting) noexcept { awaiting_ = awaiting; }
  // The join's future goes before the children's storage (a ForkGroup's Join): settle(),
  // and destroys the `n` children's Tasks not run to their end (their frames may borrow
  // what the awaiting frame frees next).
  template <class ChildAt>
  void abandon(std::size_t n, ChildAt&& child) noexcept {
    settle();
    if (finished_) return;
    for (std::size_t i = 0; i < n; ++i) {
      ForkChildBase& c = child(i);
      if (c.state == ForkState::kFresh || c.state == ForkState::kPending) cancel_inline(c);
    }
  }
  // Before the children's storage goes, if the join did not finish (the awaiting task was
  // cancelled): cancels the stolen children and waits for them, since they may borrow the
  // awaiting frame and write to that storage. Idempotent.
  void settle() noexcept {
    if (remote_count_ > 0 && !finished_) {
      shared_.remote.get().cancel_and_wait(remote_count_);
      remote_count_ = 0;
    }
  }

  // Polls the `n` children `child(i)`: true once all finished (their values are stored).
  // Throws the first exception once every child finished or was cancelled.
  template <class ChildAt>
  bool poll(std::size_t n, ChildAt&& child, Context& cx) {
    if (finished_) {
      throw std::logic_error(
          "spool::join polled again after it completed (or threw): a future must not be "
          "polled after it returned ready");
    }
    if (!started_) {
      start(n, child);
    } else if (n >= 2 && shared_.locals != current_task_locals()) {
      // Stolen children read the task-local scopes of the first poll, which may be gone now
      // (a join polled by reference in a poll_fn inside a shorter-lived scope): refused, as
      // TaskLocalScope::poll refuses it. Checked on later polls only (a join whose children
      // finish inline never pays for it).
      throw std::logic_error(
          "spool::join polled under other TaskLocal scopes than at its first poll: its children "
          "see the scopes of the first poll; poll it always from the same place (co_await it "
          "where it was first polled)");
    }
    bool pending = false;
    for (std::size_t i = 0; i < n; ++i) {
      ForkChildBase& c = child(i);
      if (c.state == ForkState::kQueued) {
        // The deque is a stack of the joins polled on this worker: a join pops every child
        // it pushed within the poll that pushed them (a nested join, inside the poll of one
        // child, pops its own before that child's poll returns), and thieves take the
        // oldest first. So the top is `c`, or the deque is empty (thieves took `c`, the
        // later children and every item below them).
        ForkItem* const popped = fork_pop(shared_.site);
        assert(popped == nullptr || popped == &c);
        if (popped == nullptr) {
          // A thief took it; then it took every later queued child too (thieves take the
          // oldest first, and this join pushed its children last-first).
          for (std::size_t j = i; j < n; ++j) {
            if (child(j).state == ForkState::kQueued) mark_remote(child(j));
          }
          continue;
        }
        c.state = ForkState::kFresh;
      }
      if (c.state != ForkState::kFresh && c.state != ForkState::kPending) continue;
      if (failed_) {
        cancel_inline(c);
        continue;
      }
      try {
        if (c.poll_inline(cx, awaiting_)) {
          c.state = ForkState::kDone;
        } else {
          c.state = ForkState::kPending;
          pending = true;
        }
      } catch (...) {
        c.state = ForkState::kDone;
        fail(std::current_exception());
      }
    }
    bool remote_done = true;
    if (remote_count_ > 0) {
      ForkRemote& r = shared_.remote.get();
      const ChildSet::Seen seen = r.children.watch_all(remote_count_, cx.waker());
      remote_done = seen.all_exited;
      if (seen.failed && !failed_) {  // a stolen child threw: the others are cancelled
        failed_ = true;
        r.cancel();
      }
    }
    if (failed_ && pending) {
      for (std::size_t i = 0; i < n; ++i) {
        if (child(i).state == ForkState::kPending) cancel_inline(child(i));
      }
      pending = false;
    }
    if (pending || !remote_done) return false;
    finished_ = true;
    if (failed_ || remote_count_ > 0) {
      if (std::exception_ptr e = shared_.remote.get().children.first_error()) {
        std::rethrow_exception(e);
      }
    }
    return true;
  }

 private:
  // The first poll: offers children 1..n-1 for stealing (or spawns them), child 0 runs here.
  template <class ChildAt>
  void start(std::size_t n, ChildAt& child) {
    started_ = true;
    if (n < 2) return;
    fork_site(shared_.site);
    shared_.locals = current_task_locals();
    for (std::size_t i = 0; i < n; ++i) child(i).shared = &shared_;
    if (shared_.site.deque != nullptr) {
      // Pushed last-first, so that the join pops them in order and thieves take the last.
      for (std::size_t i = n; --i > 0;) {
        ForkChildBase& c = child(i);
        c.state = ForkState::kQueued;
        if (!fork_push(*shared_.site.deque, c)) {
          c.state = ForkState::kFresh;  // the deque is full: the rest run inline only
          break;
        }
      }
    } else if (shared_.site.spawn_others) {
      for (std::size_t i = 1; i < n; ++i) {
        mark_remote(child(i));
        child(i).run_remote();
      }
    }
  }
  void mark_remote(ForkChildBase& c) noexcept {
    c.state = ForkState::kRemote;
    ++remote_count_;
  }
  void cancel_inline(ForkChildBase& c) noexcept {
    c.drop_task();
    c.state = ForkState::kDone;
  }
  void fail(std::exception_ptr error) noexcept {
    failed_ = true;
    ForkRemote& r = shared_.remote.get();
    r.children.record_error(std::move(error));
    r.cancel();
  }

  ForkShared shared_;
  const TaskPromiseBase* awaiting_ = nullptr;  // see link_awaiting
  std::size_t remote_count_ = 0;               // children taken from the deque (or spawned)
  bool started_ = false;
  bool finished_ = false;
  bool failed_ = false;  // a child threw: the others are cancelled
};

}  // namespace detail
}  // namespace spool
