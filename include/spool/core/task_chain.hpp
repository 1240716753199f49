// What a chain of spool::Tasks shares (task.hpp's trampoline): its state (TaskChain), the
// pending leaf it waits on and what diagnostics know of it, and the hooks of the futures
// that poll Tasks of their own (BranchAccess), for async backtraces.
//
// All Tasks nested under one outermost Task share a TaskChain, kept in the outermost
// promise:
//   - `co_await child` sets the child's continuation to the parent and asks the loop to
//     resume the child; the child's final suspension asks the loop to resume the parent.
//   - `co_await future` (any spool::Future that is not a Task) polls the future at once;
//     if it is pending, the awaiter becomes the chain's leaf and the chain stops.
//   - The next Task::poll polls only that leaf; when it is ready the loop resumes the
//     coroutine that awaited it. A spurious wake therefore costs one leaf poll.
#pragma once

#include <coroutine>
#include <cstddef>
#include <typeinfo>
#include <vector>

#include "spool/core/backtrace.hpp"
#include "spool/core/context.hpp"

namespace spool::detail {

struct PendingLeaf;

// What diagnostics know of a kind of leaf (one static record per leaf type).
struct LeafKind {
  const std::type_info* type;  // the leaf future's type (Runtime::dump)
  // Adds the unfinished branches of a combinator leaf to `bt` (null for other futures).
  void (*branches)(const PendingLeaf& leaf, Backtrace& bt);
};

// A pending leaf future awaited somewhere in a chain. poll_fn polls it with the given
// context and returns true once it is ready (its result, or the exception its poll threw,
// is then stored in the awaiter).
struct PendingLeaf {
  bool (*poll_fn)(PendingLeaf* self, Context& cx);
  const LeafKind* kind;
};

class TaskPromiseBase;

// What async backtraces reach of a future that polls Tasks of its own (when_all / when_any,
// a join, a scope): spool's own types, which declare the private member type
// `spool_detail_branch_hooks` and befriend this, so that no user type's members are taken
// for these by their names:
//   - link_awaiting(p): the coroutine that awaits it, where the backtraces of the Tasks it
//     polls go on (a co_await in a Task links it before its first poll, and unlinks it with
//     null when the coroutine goes on or away);
//   - branch_backtraces(bt), optional: adds its unfinished children to `bt`, a backtrace of
//     the chain waiting on it (from another thread, under the inspection claim).
struct BranchAccess {
  // At most this many branches of one combinator are listed; the rest are counted.
  static constexpr std::size_t kMaxListed = 64;

  template <class F>
  static constexpr bool links = requires {
    typename F::spool_detail_branch_hooks;
  };
  template <class F>
  static constexpr bool lists = links<F>&& requires(const F& f, Backtrace& bt) {
    f.branch_backtraces(bt);
  };
  template <class F>
  static void link(F& f, const TaskPromiseBase* awaiting) noexcept {
    f.link_awaiting(awaiting);
  }
  template <class F>
  static void branches(const F& f, Backtrace& bt) {
    f.branch_backtraces(bt);
  }
  // Adds unfinished child `f`, at `index`, to `bt`'s branches (counted in omitted_branches
  // past kMaxListed): a Task's chain, a combinator's own branches, or another future's type.
  // Under the claim: `waiting_on` is the mangled name, demangled after the give-back.
  template <class F>
  static void describe(const F& f, std::size_t index, Backtrace& bt);
};

// The trampoline state of one chain of nested Tasks, owned by the outermost promise.
// Touched only by the thread polling the outermost Task.
struct TaskChain {
  Context* cx = nullptr;               // the context of the poll in progress
  PendingLeaf* leaf = nullptr;         // the leaf the chain waits for, or null
  std::coroutine_handle<> after_leaf;  // resumed when `leaf` is ready
  // after_leaf's promise, for another thread's backtrace of the chain: written with `leaf`
  // at each suspension, read only while `leaf` is set (no initial store at creation).
  const TaskPromiseBase* leaf_awaiter;
  std::coroutine_handle<> next;  // resumed next by the loop in Task::poll

  // The chain stops: it waits for `pending` (polled at the next Task::poll), then resumes
  // `awaiting`, whose promise is `awaiting_promise`.
  void wait_on(PendingLeaf* pending, std::coroutine_handle<> awaiting,
               const TaskPromiseBase& awaiting_promise) noexcept {
    leaf = pending;
    after_leaf = awaiting;
    leaf_awaiter = &awaiting_promise;
  }
};

// An awaitable that runs its coroutine inside the awaiting chain instead of being polled as
// a leaf (a Generator's next()): `co_await a` uses the awaiter `a.chain_awaiter()` gives, so
// nesting grows the chain, never the stack.
template <class A>
concept ChainAwaitable = requires(A& a) {
  a.chain_awaiter();
};

}  // namespace spool::detail
