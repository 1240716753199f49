// spool::Task<T>: a lazy coroutine that is itself a Future.
//
// How a chain of Tasks runs (the trampoline). Nested `co_await task` never grows the stack
// because no coroutine ever resumes another one directly: every suspension only records
// which coroutine runs next, and returns to the loop in Task::poll, which resumes it.
// (Symmetric transfer would do the same in one jump, but g++ 12 does not turn it into a
// tail call at -O0 or under the sanitizers, so deep chains would overflow the stack.)
// All Tasks nested under one outermost Task share a TaskChain (task_chain.hpp).
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "spool/core/backtrace.hpp"
#include "spool/core/context.hpp"
#include "spool/core/frame_prefix.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task_chain.hpp"
#include "spool/core/task_errors.hpp"
#include "spool/core/yield.hpp"

namespace spool {

template <class T = void>
class Task;

namespace detail {

template <class A>
inline constexpr bool is_task_v = false;
template <class T>
inline constexpr bool is_task_v<Task<T>> = true;

template <class F>
class FutureAwaiter;
template <class T>
class TaskAwaiter;
template <class T>
class TaskPromise;
template <class T>
std::coroutine_handle<TaskPromise<T>> take_for_spawn(Task<T>& task);
// Task::poll, except that the value of a finished Task goes to `sink(value)` (`sink()` for
// void) instead of into a returned Poll; true once finished. For spool::join, which stores
// it in place: a Poll<T> returned in registers was first built in memory and copied out
// with one wide load of two narrower stores (a store-forwarding stall on every child).
// The Task's backtrace continues into `awaiting` (the coroutine that awaits the join or the
// combinator the Task is a child of, or null).
template <class T, class Sink>
bool poll_task_into(Task<T>& task, Sink&& sink, Context& cx, const TaskPromiseBase* awaiting);

// Runs the chain whose outermost coroutine is `top` (promise `p`) with `cx`: first the
// pending leaf, if any, then resumes coroutines until the chain waits on a leaf again
// (returns false) or the outermost one finished (returns true). Shared by Task::poll and
// the scheduler's spawned tasks.
bool run_chain(TaskPromiseBase& p, std::coroutine_handle<> top, Context& cx);

// `co_await spool::backtrace()`: ready at once, with the awaiting chain's sites.
struct BacktraceAwaiter {
  const TaskPromiseBase& promise;
  bool await_ready() const noexcept { return true; }
  void await_suspend(std::coroutine_handle<>) const noexcept {}
  Backtrace await_resume() const;
};

// What every Task promise has, whatever T is.
class TaskPromiseBase {
 public:
  // Not inlined: g++ 12 at -O1 (the tsan preset) otherwise sees the frame pointer come from
  // ::operator new and go to this class's operator delete, and -Wmismatched-new-delete fires.
  [[gnu::noinline]] static void* operator new(std::size_t frame_size) {
    std::uint16_t size_class;
    auto* base = static_cast<std::byte*>(allocate_frame(kFramePrefixSize + frame_size, size_class));
    ::new (base) FramePrefix{size_class, false, false};
    return base + kFramePrefixSize;
  }
  static void operator delete(void* frame, std::size_t) noexcept {
    auto* prefix = prefix_of(frame);
    if (prefix->spawned) {
      prefix->frame_destroyed = true;  // the spawned task's header frees the memory when done
    } else {
      std::uint16_t size_class = prefix->size_class;
      prefix->~FramePrefix();
      deallocate_frame(prefix, size_class);
    }
  }
  // The prefix in front of a frame allocated by operator new above.
  static FramePrefix* prefix_of(void* frame) noexcept {
    return std::launder(
        reinterpret_cast<FramePrefix*>(static_cast<std::byte*>(frame) - kFramePrefixSize));
  }

  std::suspend_always initial_suspend() noexcept { return {}; }

  // Suspends and hands the chain back to the awaiting coroutine: a Task's final suspension,
  // and each co_yield of a spool::Generator.
  struct ResumeContinuation {
    bool await_ready() noexcept { return false; }
    template <class P>
    void await_suspend(std::coroutine_handle<P> self) noexcept {
      TaskPromiseBase& p = self.promise();
      p.chain_->next = p.continuation_;  // null for the outermost coroutine: the loop stops
    }
    void await_resume() noexcept {}
  };
  ResumeContinuation final_suspend() noexcept { return {}; }

  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  // Every co_await in a Task goes through here: Tasks nest, other Futures become leaves.
  // The defaulted argument is evaluated where the co_await is written: its site, kept for
  // async backtraces (spool::backtrace(); one store of a pointer to a static record).
  template <class A>
  auto await_transform(A&& awaited, SourceSite site = SourceSite::current()) {
    using Plain = std::remove_cvref_t<A>;
    ::new (static_cast<void*>(&await_site_.site)) SourceSite(site);
    if constexpr (std::is_same_v<Plain, BacktraceRequest>) {
      return BacktraceAwaiter{*this};
    } else if constexpr (std::is_same_v<Plain, YieldNow>) {
      static_assert(!std::is_const_v<std::remove_reference_t<A>>,
                    "co_await of a const future: polling changes it; await a non-const one");
      return YieldAwaiter(awaited, *chain_);
    } else if constexpr (is_task_v<Plain>) {
      static_assert(!std::is_const_v<std::remove_reference_t<A>>,
                    "co_await of a const spool::Task: a Task is consumed by awaiting it");
      return TaskAwaiter<typename Plain::value_type>(awaited);
    } else if constexpr (ChainAwaitable<Plain> && std::is_const_v<std::remove_reference_t<A>>) {
      // A branch of its own (and an awaiter to return): the error is this message alone.
      static_assert(!std::is_const_v<std::remove_reference_t<A>>,
                    "co_await of a const spool::Generator::Next: awaiting changes it; await a "
                    "non-const one (co_await gen.next())");
      return std::suspend_never{};
    } else if constexpr (ChainAwaitable<Plain>) {
      return awaited.chain_awaiter();
    } else {
      static_assert(!std::is_const_v<std::remove_reference_t<A>>,
                    "co_await of a const future: polling changes it; await a non-const one");
      static_assert(Future<Plain>,
                    "co_await inside a spool::Task needs a spool::Future (a type with "
                    "Poll<T> poll(spool::Context&)), another spool::Task, or a "
                    "spool::Generator's next()");
      if constexpr (BranchAccess::links<Plain>) BranchAccess::link(awaited, this);
      return FutureAwaiter<Plain>(awaited, *chain_);
    }
  }

 protected:
  template <class>
  friend class spool::Task;
  template <class>
  friend class TaskAwaiter;
  friend bool run_chain(TaskPromiseBase& p, std::coroutine_handle<> top, Context& cx);
  template <class T, class Sink>
  friend bool poll_task_into(Task<T>& task, Sink&& sink, Context& cx,
                             const TaskPromiseBase* awaiting);

 public:
  // Makes this the outermost Task of its own chain, about to run `self` first. Throws if
  // it already runs in a chain (it was polled or awaited before).
  void start_as_outermost(std::coroutine_handle<> self) {
    if (chain_ != nullptr) {
      throw std::logic_error(
          "spool: a Task can be awaited or polled by one owner only, and co_awaited only "
          "before it was polled");
    }
    begin_outermost(self);
  }
  // start_as_outermost for a Task known not to have started (the caller checked started()).
  void begin_outermost(std::coroutine_handle<> self) noexcept {
    chain_ = &own_chain_;
    parent_ = nullptr;
    own_chain_.next = self;
  }
  // Runs `child` (whose promise is `cp`) next in this coroutine's chain, and this coroutine
  // (`self`) again when the child finishes or yields: how a coroutine awaits another.
  void run_child_next(std::coroutine_handle<> self, TaskPromiseBase& cp,
                      std::coroutine_handle<> child) noexcept {
    cp.chain_ = chain_;
    cp.continuation_ = self;
    cp.parent_ = this;
    chain_->next = child;
  }
  // The chain this coroutine runs in (once it started).
  TaskChain& chain() const noexcept { return *chain_; }
  // True when this Task runs as the outermost of its own chain.
  bool is_outermost() const noexcept { return chain_ == &own_chain_; }
  // True once the Task runs in a chain (it was polled or awaited).
  bool started() const noexcept { return chain_ != nullptr; }
  // The exception the body threw, if any.
  const std::exception_ptr& exception() const noexcept { return exception_; }
  // The await sites from this coroutine up to the outermost one awaiting it (through the
  // coroutine that awaits a combinator this chain is a branch of).
  Backtrace backtrace() const {
    Backtrace bt;
    add_sites(bt, nullptr);
    return bt;
  }
  // Where the chain of this outermost Task waits: the sites from the coroutine that awaits
  // the leaf up to this one (no frames when it waits on no leaf), and the branches of a
  // combinator leaf. Only while nobody polls the chain (the reader holds the inspection
  // claim of the task the chain belongs to, which orders it after the last poll).
  Backtrace waiting_backtrace() const {
    Backtrace bt;
    if (const PendingLeaf* leaf = own_chain_.leaf) {
      own_chain_.leaf_awaiter->add_sites(bt, this);
      if (leaf->kind->branches != nullptr) leaf->kind->branches(*leaf, bt);
    }
    return bt;
  }
  // The type of the leaf future the chain waits on, or null.
  const std::type_info* waiting_on() const noexcept {
    return own_chain_.leaf ? own_chain_.leaf->kind->type : nullptr;
  }

 protected:
  // Adds the sites from this coroutine up the awaiting ones to `bt`, up to `last` included
  // (null: up to the outermost).
  void add_sites(Backtrace& bt, const TaskPromiseBase* last) const {
    for (const TaskPromiseBase* p = this; p != nullptr; p = p == last ? nullptr : p->parent_) {
      bt.frames.push_back(to_await_site(p->await_site_.site));
    }
  }
  void rethrow_if_failed() {
    if (exception_) std::rethrow_exception(std::exchange(exception_, nullptr));
  }

  TaskChain* chain_ = nullptr;            // the chain this Task runs in; set before it starts
  std::coroutine_handle<> continuation_;  // the awaiting parent; null when outermost
  // continuation_'s promise, for backtraces; set when this coroutine starts (begin_outermost,
  // run_child_next), not at its creation, which stays as cheap as it was. An outermost Task
  // that is a combinator's branch (a join's child, a scope's body) gets the coroutine that
  // awaits the combinator at each poll (poll_task_into): valid during its polls only, as
  // that coroutine may go between them; nothing reads it then (another thread's read stops
  // at the outermost Task).
  const TaskPromiseBase* parent_;
  // This coroutine's last co_await, not constructed either: a backtrace reads only
  // coroutines that awaited.
  LazySite await_site_;
  std::exception_ptr exception_;  // what the body threw, if it did
  TaskChain own_chain_;           // used when this Task is the outermost
};

inline Backtrace BacktraceAwaiter::await_resume() const { return promise.backtrace(); }

template <class T>
class TaskPromise : public TaskPromiseBase {
 public:
  Task<T> get_return_object() noexcept;
  template <class U = T>
  requires std::is_constructible_v<T, U&&>
  void return_value(U&& v) { value_.emplace(std::forward<U>(v)); }
  T take_result() {
    rethrow_if_failed();
    return std::move(*value_);
  }
  // The result as a ready Poll (or rethrows the body's exception).
  Poll<T> take_ready() { return Poll<T>::ready(take_result()); }

 private:
  std::optional<T> value_;
};

template <class T>
class TaskPromise<T&> : public TaskPromiseBase {
 public:
  Task<T&> get_return_object() noexcept;
  void return_value(T& v) noexcept { value_ = std::addressof(v); }
  T& take_result() {
    rethrow_if_failed();
    return *value_;
  }
  // The result as a ready Poll (or rethrows the body's exception).
  Poll<T&> take_ready() { return Poll<T&>(take_result()); }

 private:
  T* value_ = nullptr;
};

template <>
class TaskPromise<void> : public TaskPromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take_result() { rethrow_if_failed(); }
  // A ready Poll (or rethrows the body's exception).
  Poll<void> take_ready() {
    take_result();
    return Poll<void>::ready();
  }
};

// Awaits any Future (of type F) that is not a Task, polled where it is, never moved: an
// lvalue stays the awaiting code's; an rvalue is a temporary of the co_await's full
// expression, which lives in the coroutine frame until the co_await resumes.
template <class F>
class FutureAwaiter : PendingLeaf {
  using Output = future_output_t<F>;

 public:
  FutureAwaiter(F& fut, TaskChain& chain)
      : PendingLeaf{&poll_leaf, &kKind}, fut_(fut), chain_(chain) {}

  FutureAwaiter(const FutureAwaiter&) = delete;
  FutureAwaiter& operator=(const FutureAwaiter&) = delete;
  // Before the awaiting coroutine goes on or goes away: a combinator awaited as an lvalue
  // may outlive it.
  ~FutureAwaiter() {
    if constexpr (BranchAccess::links<F>) BranchAccess::link(fut_, nullptr);
    reset_result();
  }

  // Polls at once: a future that is already ready costs no suspension.
  bool await_ready() { return poll_into_result(*chain_.cx); }
  template <class P>
  void await_suspend(std::coroutine_handle<P> awaiting) noexcept {
    chain_.wait_on(this, awaiting, awaiting.promise());
  }
  Output await_resume() {
    if (error_) std::rethrow_exception(error_);
    return std::move(result_).value();
  }

 private:
  static void branches_of(const PendingLeaf& leaf, Backtrace& bt) {
    if constexpr (BranchAccess::lists<F>) {
      BranchAccess::branches(static_cast<const FutureAwaiter&>(leaf).fut_, bt);
    }
  }
  static constexpr LeafKind kKind{&typeid(F), BranchAccess::lists<F> ? &branches_of : nullptr};

  static bool poll_leaf(PendingLeaf* leaf, Context& cx) {
    auto* self = static_cast<FutureAwaiter*>(leaf);
    try {
      return self->poll_into_result(cx);
    } catch (...) {
      self->error_ = std::current_exception();  // rethrown inside the awaiting coroutine
      return true;
    }
  }
  // Polls the future, its Poll built in place in result_ (guaranteed copy elision). A copy
  // of the Poll the leaf just wrote would be a wide load of narrow stores, which g++ turns
  // into a store-forwarding stall (measured on mpsc's receive: ~15 ns a poll).
  bool poll_into_result(Context& cx) {
    reset_result();
    ::new (static_cast<void*>(std::addressof(result_))) Poll<Output>(fut_.poll(cx));
    has_result_ = true;
    return result_.is_ready();
  }
  void reset_result() noexcept {
    if (has_result_) result_.~Poll();
    has_result_ = false;
  }

  F& fut_;
  TaskChain& chain_;
  union {
    Poll<Output> result_;  // the last poll's result, while has_result_
  };
  bool has_result_ = false;
  std::exception_ptr error_;
};

// Awaits a child Task: runs it in the parent's chain, then hands its result to the parent.
template <class T>
class TaskAwaiter {
 public:
  explicit TaskAwaiter(Task<T>& child) : child_(child) {}

  bool await_ready() const noexcept { return false; }
  template <class P>
  void await_suspend(std::coroutine_handle<P> parent) {
    TaskPromiseBase& pp = parent.promise();
    pp.run_child_next(parent, child_.start_checked(), child_.handle_);
  }
  T await_resume() { return child_.handle_.promise().take_result(); }

 private:
  Task<T>& child_;
};

}  // namespace detail

/// A lazy coroutine producing a `T` (an object type, move-only included, a reference, or
/// void). Nothing runs until it is polled or awaited. Inside it, `co_await` takes any
/// spool::Future or another Task; exceptions propagate through `co_await`.
/// A Task is itself a Future: `poll(cx)` runs it until it finishes or waits on a leaf
/// future, so any executor can drive it. Nested `co_await`s never grow the stack and
/// allocate nothing beyond each coroutine's frame. Destroying a Task destroys its frame and,
/// with it, every Task it is awaiting. Move-only; not thread-safe (one poller at a time).
template <class T>
class [[nodiscard]] Task {
 public:
  /// The coroutine's promise type, for the compiler (not for users).
  using promise_type = detail::TaskPromise<T>;
  /// The type the Task produces.
  using value_type = T;

  /// An empty Task (polling it throws).
  Task() noexcept = default;
  /// Takes over other's coroutine; other is left empty.
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  /// Destroys this Task's coroutine (if any), then takes over other's.
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      destroy();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { destroy(); }

  /// True unless the Task is empty (default-constructed or moved from).
  bool valid() const noexcept { return static_cast<bool>(handle_); }
  /// True once the coroutine has finished (its result may still be waiting to be taken).
  bool done() const noexcept { return handle_ && handle_.done(); }

  /// Runs the Task until it finishes (ready: its value, or the exception it threw is
  /// rethrown here) or waits on a leaf future (pending: that leaf stored cx's waker).
  /// Throws std::logic_error when the Task is empty, has already finished, or is being
  /// awaited by another Task.
  Poll<T> poll(Context& cx) {
    promise_type& p = promise_for_poll();
    if (!detail::run_chain(p, handle_, cx)) return pending;
    return p.take_ready();
  }

 private:
  friend promise_type;
  template <class>
  friend class detail::TaskAwaiter;
  template <class U>
  friend std::coroutine_handle<detail::TaskPromise<U>> detail::take_for_spawn(Task<U>& task);
  template <class U, class Sink>
  friend bool detail::poll_task_into(Task<U>& task, Sink&& sink, Context& cx,
                                     const detail::TaskPromiseBase* awaiting);
  friend struct detail::BranchAccess;

  // poll's checks: the promise of a Task that may be polled now, started as the outermost
  // of its own chain at its first poll. Throws std::logic_error when the Task is empty, has
  // finished, or is being awaited by another Task.
  promise_type& promise_for_poll() {
    if (!handle_) [[unlikely]]
      detail::throw_not_pollable(detail::TaskMisuse::kEmpty);
    promise_type& p = handle_.promise();
    // The poll that returned ready (or threw) already took the result.
    if (handle_.done()) [[unlikely]]
      detail::throw_not_pollable(detail::TaskMisuse::kFinished);
    if (p.chain_ == nullptr) {
      p.begin_outermost(handle_);
    } else if (!p.is_outermost()) [[unlikely]] {
      detail::throw_not_pollable(detail::TaskMisuse::kAwaited);
    }
    return p;
  }

  explicit Task(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}

  // The promise of a Task that has never run; throws when it was empty or already used.
  promise_type& start_checked() {
    if (!handle_) throw std::logic_error("spool: co_await of an empty (moved-from) Task");
    if (handle_.done() || handle_.promise().chain_ != nullptr) {
      throw std::logic_error(
          "spool: a Task can be awaited or polled by one owner only, and co_awaited only "
          "before it was polled");
    }
    return handle_.promise();
  }

 public:
  /// Gives up ownership of the coroutine frame (for executors that take a Task over, such
  /// as spawn). The Task becomes empty.
  std::coroutine_handle<promise_type> release() noexcept { return std::exchange(handle_, nullptr); }

 private:
  void destroy() noexcept {
    if (handle_) std::exchange(handle_, nullptr).destroy();
  }

  std::coroutine_handle<promise_type> handle_;
};

namespace detail {
// Takes a Task over for an executor that runs it to completion (spawn). The Task may be
// fresh, or already polled by hand: it goes on from where it stopped, and its pending leaf
// gets the new executor's waker at the next poll (a future half-polled under one executor
// and finished under another). Throws, leaving the Task as it was (so nothing leaks):
// std::invalid_argument when it is empty or has finished, std::logic_error when another
// Task is awaiting it.

template <class T>
std::coroutine_handle<TaskPromise<T>> take_for_spawn(Task<T>& task) {
  if (!task.handle_) [[unlikely]]
    throw_not_spawnable(TaskMisuse::kEmpty);
  if (task.handle_.done()) [[unlikely]]
    throw_not_spawnable(TaskMisuse::kFinished);
  TaskPromise<T>& p = task.handle_.promise();
  if (!p.started()) {
    p.begin_outermost(task.handle_);
  } else if (!p.is_outermost()) [[unlikely]] {
    throw_not_spawnable(TaskMisuse::kAwaited);
  }
  return task.release();
}

template <class T, class Sink>
bool poll_task_into(Task<T>& task, Sink&& sink, Context& cx, const TaskPromiseBase* awaiting) {
  TaskPromise<T>& p = task.promise_for_poll();
  p.parent_ = awaiting;  // after promise_for_poll: a first poll starts it with none
  if (!run_chain(p, task.handle_, cx)) return false;
  if constexpr (std::is_void_v<T>) {
    p.take_result();
    sink();
  } else {
    sink(p.take_result());
  }
  return true;
}

// Polls `f`, a child future of a combinator or a scope that `awaiting` awaits (or null): a
// Task's backtrace goes on into `awaiting`, and a combinator passes the link on to its own
// branches. Ready: `sink(value)` (`sink()` for void), and true.
template <class F, class Sink>
bool poll_child(F& f, Sink&& sink, Context& cx, const TaskPromiseBase* awaiting) {
  if constexpr (is_task_v<F>) {
    return poll_task_into(f, sink, cx, awaiting);
  } else {
    if constexpr (BranchAccess::links<F>) BranchAccess::link(f, awaiting);
    auto p = f.poll(cx);
    if (p.is_pending()) return false;
    if constexpr (std::is_void_v<future_output_t<F>>) {
      sink();
    } else {
      sink(std::move(p).value());
    }
    return true;
  }
}

template <class F>
void BranchAccess::describe(const F& f, std::size_t index, Backtrace& bt) {
  if (bt.branches.size() == kMaxListed) {
    ++bt.omitted_branches;
    return;
  }
  BacktraceBranch& b = bt.branches.emplace_back();
  b.index = index;
  if constexpr (is_task_v<F>) {
    if (!f.handle_ || !f.handle_.promise().started()) return;
    const TaskPromiseBase& p = f.handle_.promise();
    if (const std::type_info* leaf = p.waiting_on()) b.waiting_on = leaf->name();
    b.backtrace = p.waiting_backtrace();
  } else {
    b.waiting_on = typeid(F).name();
    if constexpr (lists<F>) branches(f, b.backtrace);
  }
}

inline bool run_chain(TaskPromiseBase& p, std::coroutine_handle<> top, Context& cx) {
  TaskChain& chain = p.own_chain_;
  chain.cx = &cx;
  if (chain.leaf != nullptr) {
    if (!chain.leaf->poll_fn(chain.leaf, cx)) return false;
    chain.leaf = nullptr;
    chain.next = chain.after_leaf;
  }
  while (chain.next) std::exchange(chain.next, nullptr).resume();
  if (!top.done()) return false;  // stopped on a leaf
  chain.cx = nullptr;
  return true;
}

template <class T>
Task<T> TaskPromise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<TaskPromise>::from_promise(*this));
}
template <class T>
Task<T&> TaskPromise<T&>::get_return_object() noexcept {
  return Task<T&>(std::coroutine_handle<TaskPromise>::from_promise(*this));
}
inline Task<void> TaskPromise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<TaskPromise>::from_promise(*this));
}
}  // namespace detail

}  // namespace spool
