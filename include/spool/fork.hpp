// spool::join and spool::join_all: structured fork-join. The children of a join may borrow
// from the awaiting coroutine's frame, since the join does not finish until each of them
// has. On a worker of a multi-thread runtime the awaiting task runs the children itself, in
// order, while idle workers steal the ones it has not reached yet: an unstolen child costs
// a push and a pop on the worker's fork deque, and no task of its own. See docs/fork.md.
#pragma once

#include <array>
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
#include "spool/detail/spin_lock.hpp"
#include "spool/join_handle.hpp"
#include "spool/runtime.hpp"

namespace spool {
namespace detail {

class ForkDeque;  // src/scheduler/multi_thread/fork_deque.hpp

// A child offered for stealing in a worker's fork deque.
struct ForkItem {
  // Called once, by the thread that took the item from a deque other than by its join's own
  // pop (a thief, or a worker handing its core over in block_in_place), or by the join
  // itself where it spawns its children (ForkSite::spawn_others): runs the child as a
  // runtime task of its own.
  void (*run_remote)(ForkItem* self) noexcept;
};

// Where a join is polled.
struct ForkSite {
  ForkDeque* deque = nullptr;        // this worker's fork deque; null: none here
  RuntimeShared* runtime = nullptr;  // where stolen children run as tasks (with deque or spawn)
  // The task being polled, whose channel (and deadline, on an EDF channel) a stolen child
  // inherits, as a spawn from it would; null: none, or a runtime without levels. (Its
  // channel and deadline never change once spawned, and it outlives its join.)
  const TaskHeader* parent = nullptr;
  bool spawn_others = false;  // no deque, but a multi-thread runtime: spawn children
};

// Sets `site` (empty on entry) to the current thread's: a multi-thread worker holding its
// core gives its deque; a thread of a multi-thread runtime without a core (block_on,
// blocking pool) gives spawn_others; anything else leaves it empty (the children run
// inline, one by one). (Written in place, field by field: a ForkSite returned by value was
// copied with one wide load of narrower stores, a store-forwarding stall that cost W11 4 ns
// a join.)
void fork_site(ForkSite& site) noexcept;
// Offers `item` for stealing on `deque`, which fork_site gave this thread; false when full.
bool fork_push(ForkDeque& deque, ForkItem& item) noexcept;
// Takes back the item this thread pushed last on `deque`; null when a thief took it, or when
// this thread no longer holds the deque (block_in_place handed its items over as tasks).
ForkItem* fork_pop(ForkDeque& deque) noexcept;
// Spawns a stolen child's task on `rt`, as a spawn from `parent` (may be null) would.
TaskHeader* spawn_fork_task(RuntimeShared& rt, TaskPromiseBase& promise,
                            std::coroutine_handle<> frame, const TaskHeader* parent);

// Where a child of a join is.
enum class ForkState : std::uint8_t {
  kFresh,    // not started, runs inline when the join reaches it
  kQueued,   // in the fork deque, until the join pops it (then kFresh) or a thief takes it
  kPending,  // polled inline, pending
  kDone,     // finished inline (its value stored), threw, or was cancelled
  kRemote,   // taken from the deque: runs as a task of its own (ForkRemote counts it)
};

class ForkRemote;

// What the join needs of a child, whatever its type.
struct ForkChildBase : ForkItem {
  // Polls the child's Task with `cx`; true once it finished (its value stored). Throws what
  // the child threw.
  bool (*poll_inline)(ForkChildBase& self, Context& cx);
  // Destroys the child's Task (cancelled: it will not run on).
  void (*drop_task)(ForkChildBase& self) noexcept;
  ForkRemote* remote = nullptr;         // set by the join's first poll, before the child is offered
  ForkState state = ForkState::kFresh;  // the join's own (never read by a thief)
  // ForkRemote's, under its lock, for a child taken from the deque:
  bool half_exited = false;               // its task's start or end was counted already
  bool ended_without_value = false;       // its task ended first, cancelled (see exited())
  ForkChildBase* next_started = nullptr;  // the list of started tasks (to cancel them)
  std::optional<JoinHandle<void>> remote_task;
};

// The children of one join that run as tasks of their own, and the join's first exception.
// Touched only when a child was stolen or something failed: its lock is the rare path.
// Implemented in src/runtime/fork.cpp.
class ForkRemote {
 public:
  ForkRemote() = default;
  ForkRemote(const ForkRemote&) = delete;
  ForkRemote& operator=(const ForkRemote&) = delete;

  // Set by the join's first poll before any child is offered; read by the thread that runs
  // a child remotely (ordered by the deque's protocol, or by the spawn).
  ForkSite site;

  // A stolen child's task was spawned (`task`), or could not be (nullopt; `error`). With
  // exited(), counts the child out once both were called.
  void started(ForkChildBase& child, std::optional<JoinHandle<void>> task,
               std::exception_ptr error) noexcept;
  // A stolen child's task ends: its value stored (`produced`), its exception, or neither
  // (cancelled). Wakes the join if this was the last child it waits for.
  void exited(ForkChildBase& child, std::exception_ptr error, bool produced) noexcept;
  // Records `error` unless an earlier one was recorded.
  void record_error(std::exception_ptr error) noexcept;
  // What the join sees of its stolen children.
  struct Seen {
    bool all_exited;  // `expected` of them were counted out
    bool failed;      // an exception was recorded (a stolen child's, or the join's own)
  };
  // Keeps `waker` (unless all exited), woken when `expected` stolen children were counted
  // out, and when the first exception is recorded.
  Seen watch(std::size_t expected, const Waker& waker);
  // The first exception recorded, or null.
  std::exception_ptr first_error() noexcept;
  // Cancels every stolen child: those started now, the others as they start.
  void cancel() noexcept;
  // cancel(), then blocks until `expected` stolen children were counted out (the join is
  // destroyed before it finished, and they may borrow what it is about to free).
  void cancel_and_wait(std::size_t expected) noexcept;

 private:
  // With lock_ held: one more child is out; hands over the waker to wake if it was the last.
  void count_exit_locked(Waker& to_wake) noexcept;
  // With lock_ held: records `error` if it is the first, and then copies the waker to wake
  // (the join cancels its other children at its next poll).
  void record_error_locked(std::exception_ptr error, Waker& to_wake) noexcept;

  SpinLock lock_;
  // All guarded by lock_:
  std::size_t exited_ = 0;
  std::size_t expected_ = static_cast<std::size_t>(-1);  // unknown until the join waits
  bool cancelled_ = false;
  Waker waiter_;
  std::exception_ptr error_;
  ForkChildBase* started_ = nullptr;
};

// The value a child of type T gives (void: std::monostate).
template <class T>
using ForkValue = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

// Polls `task` with `cx`; stores its value in `value` once it finished.
template <class T>
bool poll_fork_task(Task<T>& task, std::optional<ForkValue<T>>& value, Context& cx) {
  return poll_task_into(
      task, [&value](auto&&... v) { value.emplace(std::forward<decltype(v)>(v)...); }, cx);
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
  RemoteChild(ForkChild<T>& child, Task<T> task) noexcept
      : child_(&child), task_(std::move(task)) {}
  RemoteChild(RemoteChild&& other) noexcept
      : child_(std::exchange(other.child_, nullptr)),
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
    c->remote->exited(*c, std::move(error_), produced_);
  }

 private:
  struct Run {
    RemoteChild* self;
    Poll<void> poll(Context& cx) {
      if (!poll_fork_task(self->task_, self->child_->value, cx)) return pending;
      self->produced_ = true;
      return Poll<void>::ready();
    }
  };

  ForkChild<T>* child_;  // null once moved from
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
  explicit ForkChild(Task<T> t) noexcept : task(std::move(t)) {
    run_remote = &run_remote_fn;
    poll_inline = &poll_inline_fn;
    drop_task = &drop_task_fn;
  }

  Task<T> task;  // empty once it ran remotely
  std::optional<ForkValue<T>> value;

 private:
  static void run_remote_fn(ForkItem* item) noexcept {
    auto& c = static_cast<ForkChild&>(*item);
    ForkRemote& r = *c.remote;
    std::optional<JoinHandle<void>> handle;
    std::exception_ptr error;
    try {
      handle.emplace(spawn_as_task(run_remote_child<T>(RemoteChild<T>(c, std::move(c.task))),
                                   [&r](TaskPromiseBase& promise, std::coroutine_handle<> frame) {
                                     return spawn_fork_task(*r.site.runtime, promise, frame,
                                                            r.site.parent);
                                   }));
    } catch (...) {
      error = std::current_exception();  // no memory for the task (its child exited)
    }
    r.started(c, std::move(handle), std::move(error));
  }
  static bool poll_inline_fn(ForkChildBase& self, Context& cx) {
    auto& c = static_cast<ForkChild&>(self);
    return poll_fork_task(c.task, c.value, cx);
  }
  static void drop_task_fn(ForkChildBase& self) noexcept {
    static_cast<ForkChild&>(self).task = Task<T>();
  }
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
      remote_.cancel_and_wait(remote_count_);
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
    if (!started_) start(n, child);
    bool pending = false;
    for (std::size_t i = 0; i < n; ++i) {
      ForkChildBase& c = child(i);
      if (c.state == ForkState::kQueued) {
        if (fork_pop(*remote_.site.deque) == nullptr) {
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
        if (c.poll_inline(c, cx)) {
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
      const ForkRemote::Seen seen = remote_.watch(remote_count_, cx.waker());
      remote_done = seen.all_exited;
      if (seen.failed && !failed_) {  // a stolen child threw: the others are cancelled
        failed_ = true;
        remote_.cancel();
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
      if (std::exception_ptr e = remote_.first_error()) std::rethrow_exception(e);
    }
    return true;
  }

 private:
  // The first poll: offers children 1..n-1 for stealing (or spawns them), child 0 runs here.
  template <class ChildAt>
  void start(std::size_t n, ChildAt& child) {
    started_ = true;
    if (n < 2) return;
    fork_site(remote_.site);
    for (std::size_t i = 0; i < n; ++i) child(i).remote = &remote_;
    if (remote_.site.deque != nullptr) {
      // Pushed last-first, so that the join pops them in order and thieves take the last.
      for (std::size_t i = n; --i > 0;) {
        ForkChildBase& c = child(i);
        c.state = ForkState::kQueued;
        if (!fork_push(*remote_.site.deque, c)) {
          c.state = ForkState::kFresh;  // the deque is full: the rest run inline only
          break;
        }
      }
    } else if (remote_.site.spawn_others) {
      for (std::size_t i = 1; i < n; ++i) {
        mark_remote(child(i));
        child(i).run_remote(&child(i));
      }
    }
  }
  void mark_remote(ForkChildBase& c) noexcept {
    c.state = ForkState::kRemote;
    ++remote_count_;
  }
  void cancel_inline(ForkChildBase& c) noexcept {
    c.drop_task(c);
    c.state = ForkState::kDone;
  }
  void fail(std::exception_ptr error) noexcept {
    failed_ = true;
    remote_.record_error(std::move(error));
    remote_.cancel();
  }

  ForkRemote remote_;
  std::size_t remote_count_ = 0;  // children taken from the deque (or spawned)
  bool started_ = false;
  bool finished_ = false;
  bool failed_ = false;  // a child threw: the others are cancelled
};

}  // namespace detail

/// The future of spool::join: ready with a tuple of the children's values (std::monostate
/// for a void child) once every child finished. See spool::join.
template <class... Ts>
class [[nodiscard]] JoinFuture {
 public:
  /// The children's values, in the order they were given.
  using Output = std::tuple<detail::ForkValue<Ts>...>;

  /// A join of `tasks`; nothing runs before the first poll.
  explicit JoinFuture(Task<Ts>... tasks) : children_(detail::ForkChild<Ts>(std::move(tasks))...) {}
  /// Only before the first poll (std::logic_error after).
  JoinFuture(JoinFuture&& other)
      : children_((other.core_.check_movable(), std::move(other.children_))) {}
  JoinFuture& operator=(JoinFuture&&) = delete;

  /// Runs the children (see spool::join); throws the first exception once every child
  /// finished or was cancelled.
  Poll<Output> poll(Context& cx) {
    std::array<detail::ForkChildBase*, sizeof...(Ts)> kids = std::apply(
        [](auto&... c) { return std::array<detail::ForkChildBase*, sizeof...(Ts)>{&c...}; },
        children_);
    if (!core_.poll(
            kids.size(), [&](std::size_t i) -> auto& { return *kids[i]; }, cx)) {
      return pending;
    }
    return Poll<Output>::ready(
        std::apply([](auto&... c) { return Output(std::move(*c.value)...); }, children_));
  }

 private:
  std::tuple<detail::ForkChild<Ts>...> children_;
  detail::ForkJoinCore core_;  // last: destroyed first, it waits for the stolen children
};

/// The future of spool::join_all: ready with the children's values in order (nothing for
/// void children) once every child finished. See spool::join_all.
template <class T>
class [[nodiscard]] JoinAllFuture {
 public:
  /// std::vector<T>, or void.
  using Output = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;

  /// A join of `tasks`; nothing runs before the first poll.
  explicit JoinAllFuture(std::vector<Task<T>> tasks) {
    children_.reserve(tasks.size());
    for (Task<T>& t : tasks) children_.emplace_back(std::move(t));
  }
  /// Only before the first poll (std::logic_error after).
  JoinAllFuture(JoinAllFuture&& other)
      : children_((other.core_.check_movable(), std::move(other.children_))) {}
  JoinAllFuture& operator=(JoinAllFuture&&) = delete;

  /// Runs the children (see spool::join_all); throws the first exception once every child
  /// finished or was cancelled.
  Poll<Output> poll(Context& cx) {
    if (!core_.poll(
            children_.size(), [&](std::size_t i) -> auto& { return children_[i]; }, cx)) {
      return pending;
    }
    if constexpr (std::is_void_v<T>) {
      return Poll<void>::ready();
    } else {
      std::vector<T> out;
      out.reserve(children_.size());
      for (auto& c : children_) out.push_back(std::move(*c.value));
      return Poll<Output>::ready(std::move(out));
    }
  }

 private:
  std::vector<detail::ForkChild<T>> children_;
  detail::ForkJoinCore core_;  // last: destroyed first, it waits for the stolen children
};

/// Structured fork-join: `auto [a, b] = co_await spool::join(left(), right());` runs the
/// futures (Tasks, or any Future: each becomes a Task) in parallel and gives a tuple of
/// their values (std::monostate for void ones), in order. The children may borrow from the
/// awaiting coroutine's frame: the join finishes only once each of them has.
///
/// On a worker of a multi-thread runtime the awaiting task runs the children itself, in
/// order, while idle workers steal those it has not reached yet (a stolen child runs as a
/// task of its own, on the awaiting task's channel). On a thread of a multi-thread runtime
/// that is not a worker (block_on, the blocking pool) the children after the first are
/// spawned; elsewhere (a current-thread runtime, any other executor) they run inline, in
/// turn, like when_all.
///
/// The first exception a child throws cancels the children not yet run inline and the
/// stolen ones, and is rethrown once all of them finished or were cancelled. Destroying the
/// future before it finished cancels the children and waits for the stolen ones to be
/// gone. Do not move the future once it was polled (std::logic_error).
template <Future... Fs>
requires(sizeof...(Fs) >= 1) auto join(Fs&&... futs) {
  return JoinFuture<future_output_t<std::remove_cvref_t<Fs>>...>(
      detail::into_task(std::forward<Fs>(futs))...);
}

/// spool::join for a number of children known at run time: gives a std::vector of their
/// values, in order (nothing for void Tasks).
template <class T>
JoinAllFuture<T> join_all(std::vector<Task<T>> tasks) {
  return JoinAllFuture<T>(std::move(tasks));
}

template <class T, std::size_t N>
class ForkGroup;

/// The values of a ForkGroup's children once joined, in the order they were forked: a
/// range of T& (valid while the group lives).
template <class T>
class ForkValues {
 public:
  /// A forward iterator over the values.
  class iterator {
   public:
    /// The type of a value.
    using value_type = T;
    /// The type of the distance between two iterators.
    using difference_type = std::ptrdiff_t;
    /// A singular iterator.
    iterator() = default;
    /// The iterator at `c` (ForkValues makes them).
    explicit iterator(detail::ForkChild<T>* c) noexcept : c_(c) {}
    /// The value.
    T& operator*() const noexcept { return *c_->value; }
    /// The next value.
    iterator& operator++() noexcept {
      ++c_;
      return *this;
    }
    /// The next value (gives this one).
    iterator operator++(int) noexcept { return iterator(c_++); }
    /// Same position.
    bool operator==(const iterator&) const = default;

   private:
    detail::ForkChild<T>* c_ = nullptr;
  };

  /// The values of the `n` children from `first` on (ForkGroup::Join makes it).
  ForkValues(detail::ForkChild<T>* first, std::size_t n) noexcept : first_(first), n_(n) {}
  /// The first value.
  iterator begin() const noexcept { return iterator(first_); }
  /// Past the last value.
  iterator end() const noexcept { return iterator(first_ + n_); }
  /// How many children were joined.
  std::size_t size() const noexcept { return n_; }
  /// The value of the `i`-th child forked.
  T& operator[](std::size_t i) const noexcept { return *first_[i].value; }

 private:
  detail::ForkChild<T>* first_;
  std::size_t n_;
};

/// A fork group of at most N children of type T, held in place: nothing is allocated but
/// the children's frames. `group.fork(child())` adds a child (nothing runs yet);
/// `co_await group.join()` runs them all as spool::join_all does and gives a ForkValues
/// range over their values (void for T = void). Declare it in the coroutine that joins
/// (the children may borrow that frame); it can be joined once. Neither copyable nor
/// movable. Its destructor, if the join was cancelled before it finished, cancels the
/// stolen children and waits for them.
template <class T, std::size_t N>
class ForkGroup {
  static_assert(N > 0, "spool::ForkGroup: a group holds at least one child");

 public:
  ForkGroup() = default;
  ForkGroup(const ForkGroup&) = delete;
  ForkGroup& operator=(const ForkGroup&) = delete;
  ~ForkGroup() {
    core_.settle();
    for (std::size_t i = n_; i-- > 0;) child(i).~ForkChild<T>();
  }

  /// Adds `fut` (a Task<T>, or any Future giving T) as the next child. Throws
  /// std::length_error when the group holds N children already, std::logic_error once it
  /// was joined.
  template <Future F>
  void fork(F&& fut) {
    if (joined_) {
      throw std::logic_error("spool::ForkGroup::fork after join(): a group is joined once");
    }
    if (n_ == N) {
      throw std::length_error("spool::ForkGroup::fork: the group is full (it holds N = " +
                              std::to_string(N) + " children); declare a larger group");
    }
    ::new (static_cast<void*>(storage_ + n_ * sizeof(detail::ForkChild<T>)))
        detail::ForkChild<T>(detail::into_task(std::forward<F>(fut)));
    ++n_;
  }
  /// How many children were forked.
  std::size_t size() const noexcept { return n_; }

  /// The future of join(): runs the children, then is ready with their values. Destroyed
  /// before it finished (the awaiting task was cancelled), it cancels the children and waits
  /// for the stolen ones, before any local declared after the group goes.
  class [[nodiscard]] Join {
   public:
    /// ForkValues<T>, or void.
    using Output = std::conditional_t<std::is_void_v<T>, void, ForkValues<T>>;
    /// The join of `group`'s children (ForkGroup::join makes it).
    explicit Join(ForkGroup& group) noexcept : group_(&group) {}
    /// Takes `other`'s place (a Join may move at any time: its state is in the group).
    Join(Join&& other) noexcept : group_(std::exchange(other.group_, nullptr)) {}
    Join& operator=(Join&&) = delete;
    ~Join() {
      if (group_ != nullptr) {
        ForkGroup& g = *group_;
        g.core_.abandon(
            g.n_, [&g](std::size_t i) -> auto& { return g.child(i); });
      }
    }
    /// Runs the children (see spool::join_all).
    Poll<Output> poll(Context& cx) {
      ForkGroup& g = *group_;
      if (!g.core_.poll(
              g.n_, [&g](std::size_t i) -> auto& { return g.child(i); }, cx)) {
        return pending;
      }
      if constexpr (std::is_void_v<T>) {
        return Poll<void>::ready();
      } else {
        return Poll<Output>::ready(ForkValues<T>(g.n_ > 0 ? &g.child(0) : nullptr, g.n_));
      }
    }

   private:
    ForkGroup* group_;
  };
  /// Joins the children forked so far (once: a second join throws std::logic_error).
  Join join() {
    if (joined_) throw std::logic_error("spool::ForkGroup::join: the group was joined already");
    joined_ = true;
    return Join(*this);
  }

 private:
  detail::ForkChild<T>& child(std::size_t i) noexcept {
    return *std::launder(
        reinterpret_cast<detail::ForkChild<T>*>(storage_ + i * sizeof(detail::ForkChild<T>)));
  }

  alignas(detail::ForkChild<T>) std::byte storage_[N * sizeof(detail::ForkChild<T>)];
  std::size_t n_ = 0;
  bool joined_ = false;
  detail::ForkJoinCore core_;
};

}  // namespace spool
