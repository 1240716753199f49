// Children: what when_all and when_any share — the children (TupleBranches or VecBranches),
// one Waker per child (ChildWakers), and the combinator's life cycle (movable until its
// first poll, not polled again once finished, children cancelled when it finishes).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/detail/branches.hpp"
#include "spool/detail/child_wakers.hpp"

namespace spool::detail {

// A combinator's life cycle: movable until its first poll only (its children are polled in
// place, and may have linked themselves somewhere: moving it afterwards throws
// std::logic_error), and not to be polled again once it finished.
class PollGuard {
 public:
  explicit PollGuard(const char* who) noexcept : who_(who) {}
  PollGuard(PollGuard&& other) : who_(other.who_) {
    if (other.polled_) {
      throw std::logic_error(std::string(who_) +
                             " moved after its first poll: its children are polled in place; "
                             "move it before polling it (co_await polls it where it is)");
    }
  }
  PollGuard& operator=(PollGuard&&) = delete;

  // Called at the start of every poll; throws once finish() was called.
  void begin_poll() {
    if (finished_) {
      throw std::logic_error(std::string(who_) +
                             " polled again after it completed (or threw): a future must not be "
                             "polled after it returned ready");
    }
    polled_ = true;
  }
  // The combinator completed or threw.
  void finish() noexcept { finished_ = true; }

 private:
  const char* who_;
  bool polled_ = false;
  bool finished_ = false;
};

// The children of one combinator, each polled with its own Waker in a nested Context.
template <class Branches>
class Children {
 public:
  // `who` names the combinator in errors; `args` build the Branches.
  template <class... Args>
  explicit Children(const char* who, Args&&... args)
      : guard_(who), branches_(std::forward<Args>(args)...) {
    wakers_.grow(branches_.size());
  }

  // One poll: registers the parent's waker, then polls each child woken since the last poll
  // (every child at the first) and calls `on_ready(i)` for each that is ready (true: stop
  // polling). If a child's poll throws, finish() runs and the exception propagates.
  template <class OnReady>
  void poll(Context& cx, OnReady&& on_ready) {
    guard_.begin_poll();
    wakers_.register_parent(cx.waker());
    try {
      wakers_.for_each_ready([&](std::size_t i) {
        Context child_cx(wakers_.waker(i), cx);
        return branches_.poll(i, child_cx, awaiting_) && on_ready(i);
      });
    } catch (...) {
      finish();
      throw;
    }
  }

  // The combinator is done: not to be polled again; every unfinished child is cancelled.
  void finish() noexcept {
    guard_.finish();
    branches_.cancel_all();
  }

  Branches& branches() noexcept { return branches_; }

  // The coroutine that awaits the combinator (BranchAccess, task.hpp), or null. A Task
  // branch's parent_ may still point at a coroutine gone meanwhile, but nothing reads it
  // before the branch's next poll gives it this one (Branch::poll), and a backtrace read
  // from another thread stops at the branch.
  void set_awaiting(const TaskPromiseBase* awaiting) noexcept { awaiting_ = awaiting; }
  // Adds the unfinished branches to `bt`'s (BranchAccess::describe).
  void describe_branches(Backtrace& bt) const { branches_.describe_all(bt); }

 private:
  PollGuard guard_;  // first: a refused move moves nothing else
  ChildWakers wakers_;
  Branches branches_;
  const TaskPromiseBase* awaiting_ = nullptr;  // the coroutine that awaits the combinator
};

// The base of when_all's and when_any's futures: their children, built in place.
template <class Branches>
class Combinator {
 public:
  // `args` (a name for errors, then the futures) build the children.
  template <class... Args>
  explicit Combinator(std::in_place_t, Args&&... args) : children_(std::forward<Args>(args)...) {}

 protected:
  Children<Branches> children_;

 private:
  // For async backtraces (BranchAccess, task.hpp): the branches go on into the Task that
  // awaits the combinator, and a backtrace of its chain lists them.
  friend struct BranchAccess;
  using spool_detail_branch_hooks = void;
  void link_awaiting(const TaskPromiseBase* awaiting) noexcept { children_.set_awaiting(awaiting); }
  void branch_backtraces(Backtrace& bt) const { children_.describe_branches(bt); }
};

// Combinator<TupleBranches<...>> over `futs` (moved in); `who` names it in errors. Every
// part is built in place: no temporary Children or Branch is moved (g++ 12 at -O1 and up
// warns, wrongly, that a moved-from temporary's std::optional may be uninitialised).
template <template <class> class Combinator, class... Fs>
Combinator<TupleBranches<std::decay_t<Fs>...>> combine(const char* who, Fs&&... futs) {
  return Combinator<TupleBranches<std::decay_t<Fs>...>>(std::in_place, who,
                                                        std::forward<Fs>(futs)...);
}

// Combinator<VecBranches<F>> over `futs`; `who` names it in errors.
template <template <class> class Combinator, class F>
Combinator<VecBranches<F>> combine(const char* who, std::vector<F> futs) {
  return Combinator<VecBranches<F>>(std::in_place, who, std::move(futs));
}

}  // namespace spool::detail
