// spool::when_all: wait for every one of several futures; the first exception cancels the rest.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/children.hpp"

namespace spool {

/// The future of `when_all(...)`: ready with every child's output once all are ready — a
/// `std::tuple` in argument order (WhenAll), or a `std::vector` in vector order (WhenAllVec);
/// see branch_output for void and reference outputs. Each child is polled with its own
/// Waker in a nested Context (same reactor slot), so a wake from one child re-polls only
/// that child; a child that is ready is destroyed at once (its output kept). If a child's
/// poll throws, every other child is cancelled (destroyed; a JoinHandle aborted first) and
/// the exception propagates; destroying an unfinished when_all cancels its children the
/// same way. Movable until its first poll; moving it afterwards throws std::logic_error.
template <class Branches>
class BasicWhenAll {
 public:
  /// What the future produces.
  using Output = typename Branches::AllOutput;

  /// Takes the children over: `args` (a name for errors, then the futures) build them.
  template <class... Args>
  explicit BasicWhenAll(std::in_place_t, Args&&... args)
      : children_(std::forward<Args>(args)...), remaining_(children_.branches().size()) {}

  /// Polls the children woken since the last poll (all of them at the first).
  Poll<Output> poll(Context& cx) {
    children_.poll(cx, [this](std::size_t) {
      --remaining_;
      return false;
    });
    if (remaining_ != 0) return pending;
    children_.finish();
    return Poll<Output>::ready(children_.branches().take_all());
  }

 private:
  detail::Children<Branches> children_;
  std::size_t remaining_;  // children not ready yet
};

/// when_all of a list of futures of any types: a std::tuple of their outputs.
template <Future... Fs>
using WhenAll = BasicWhenAll<detail::TupleBranches<Fs...>>;

/// Waits for all of `futs` (any Futures: Tasks, JoinHandles, leaves; moved in) and gives a
/// `std::tuple` of their outputs; the first exception cancels the others and propagates.
/// See BasicWhenAll.
template <Future... Fs>
WhenAll<std::decay_t<Fs>...> when_all(Fs&&... futs) {
  return detail::combine<BasicWhenAll>("spool::when_all", std::forward<Fs>(futs)...);
}

/// Waits for all of `futs` and gives a `std::vector` of their outputs, in order. See
/// BasicWhenAll.
template <Future F>
BasicWhenAll<detail::VecBranches<F>> when_all(std::vector<F> futs) {
  return detail::combine<BasicWhenAll>("spool::when_all", std::move(futs));
}

}  // namespace spool
