// One child future of a combinator: polled until it is ready (its output then kept), or
// cancelled (a JoinHandle is aborted).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/combinators/branch_output.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task.hpp"
#include "spool/join_handle.hpp"

namespace spool::detail {

template <class F>
inline constexpr bool is_join_handle_v = false;
template <class T>
inline constexpr bool is_join_handle_v<JoinHandle<T>> = true;

// `p` with its value stored as branch_output says.
template <class T>
Poll<typename branch_output<T>::type> lift(Poll<T>&& p) {
  using Out = typename branch_output<T>::type;
  if (p.is_pending()) return pending;
  if constexpr (std::is_void_v<T>) {
    return Poll<Out>::ready();
  } else {
    return Poll<Out>::ready(std::move(p).value());
  }
}

// One child future of a combinator, owned until it is ready or cancelled. Destroying an
// unfinished Branch cancels it: the future is destroyed, and a JoinHandle is aborted first
// (dropping it would only detach its task). The future lives in a union, not a
// std::optional: g++ 12 at -O1 and up warns, wrongly, that a std::optional's payload may be
// used uninitialised once such a member is moved or destroyed on several paths.
template <Future F>
class Branch {
 public:
  using Output = branch_output_t<F>;

  template <class U>
  requires std::is_constructible_v<F, U&&>
  explicit Branch(U&& fut) : fut_(std::forward<U>(fut)), active_(true) {}
  Branch(Branch&& other) : active_(false) {
    if (!other.active_) return;
    std::construct_at(&fut_, std::move(other.fut_));
    active_ = true;
  }
  Branch& operator=(Branch&&) = delete;
  ~Branch() { cancel(); }

  // True until the future was ready or cancelled.
  bool active() const noexcept { return active_; }

  // Polls the future (active() must be true), linked to `awaiting`, the coroutine that
  // awaits the combinator (or null). Ready: keeps its output for take() and destroys the
  // future at once, and returns true. An exception from its poll propagates.
  bool poll(Context& cx, const TaskPromiseBase* awaiting) {
    auto keep = [this](auto&&... v) { out_.emplace(std::forward<decltype(v)>(v)...); };
    if (!poll_child(fut_, keep, cx, awaiting)) return false;
    destroy();
    return true;
  }

  // Adds the future, unless it finished, to `bt`'s branches as branch `index`.
  void describe(std::size_t index, Backtrace& bt) const {
    if (active_) BranchAccess::describe(fut_, index, bt);
  }

  // The output kept by the poll that returned true.
  Output take() { return std::move(*out_); }

  // Cancels the future if it is still active (aborting a JoinHandle's task).
  void cancel() noexcept {
    if (!active_) return;
    if constexpr (is_join_handle_v<F>) fut_.abort();
    destroy();
  }

 private:
  void destroy() noexcept {
    active_ = false;
    fut_.~F();
  }

  union {
    F fut_;  // alive while active_
  };
  bool active_;
  std::optional<Output> out_;
};

}  // namespace spool::detail
