// One child future of a combinator: polled until it is ready (its output then kept), or
// cancelled (a JoinHandle is aborted).
#pragma once

#include <optional>
#include <type_traits>
#include <utility>

#include "spool/combinators/branch_output.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
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
// (dropping it would only detach its task).
template <Future F>
class Branch {
 public:
  using Output = branch_output_t<F>;

  explicit Branch(F fut) : fut_(std::move(fut)) {}
  Branch(Branch&&) = default;
  Branch& operator=(Branch&&) = delete;
  ~Branch() { cancel(); }

  // True until the future was ready or cancelled.
  bool active() const noexcept { return fut_.has_value(); }

  // Polls the future (active() must be true). Ready: keeps its output for take() and
  // destroys the future at once, and returns true. An exception from its poll propagates.
  bool poll(Context& cx) {
    Poll<Output> p = lift(fut_->poll(cx));
    if (p.is_pending()) return false;
    out_.emplace(std::move(p).value());
    fut_.reset();
    return true;
  }

  // The output kept by the poll that returned true.
  Output take() { return std::move(*out_); }

  // Cancels the future if it is still active (aborting a JoinHandle's task).
  void cancel() noexcept {
    if constexpr (is_join_handle_v<F>) {
      if (fut_) fut_->abort();
    }
    fut_.reset();
  }

 private:
  std::optional<F> fut_;
  std::optional<Output> out_;
};

}  // namespace spool::detail
