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
#include "spool/detail/moved_in.hpp"

namespace spool {

/// The future of `when_all(...)`: ready once every child is, with all their outputs — a
/// `std::tuple` in argument order, or a `std::vector` in vector order (see branch_output).
/// A child's poll that throws cancels the other children (a JoinHandle is aborted), then
/// its exception propagates. Waking, cancellation and moving: docs/combinators.md.
template <class Branches>
class [[nodiscard]] BasicWhenAll : public detail::Combinator<Branches> {
 public:
  /// Takes the children over.
  using detail::Combinator<Branches>::Combinator;
  /// What the future produces.
  using Output = typename Branches::AllOutput;

  /// Polls the children woken since the last poll (all of them at the first).
  Poll<Output> poll(Context& cx) {
    this->children_.poll(cx, [this](std::size_t) {
      --remaining_;
      return false;
    });
    if (remaining_ != 0) return pending;
    this->children_.finish();
    return Poll<Output>::ready(this->children_.branches().take_all());
  }

 private:
  std::size_t remaining_ = this->children_.branches().size();  // children not ready yet
};

/// when_all of a list of futures of any types: a std::tuple of their outputs.
template <Future... Fs>
using WhenAll = BasicWhenAll<detail::TupleBranches<Fs...>>;

/// Waits for all of `futs` (any Futures: Tasks, JoinHandles, leaves) and gives a
/// `std::tuple` of their outputs; the first exception cancels the others and propagates.
/// The futures are moved in: a named one is passed as `std::move(f)` (an lvalue is refused
/// at compile time). See BasicWhenAll.
template <Future... Fs>
WhenAll<std::decay_t<Fs>...> when_all(Fs&&... futs) {
  static_assert(detail::all_moved_in<Fs...>,
                "spool::when_all: pass futures by std::move(...); it takes them over");
  // Every one is an rvalue (asserted): std::move is std::forward here, and a misuse stops
  // at the assertion instead of going on into the children's constructors.
  return detail::combine<BasicWhenAll>("spool::when_all", std::move(futs)...);
}

/// Waits for all of `futs` and gives a `std::vector` of their outputs, in order. The vector
/// is moved in: a named one is passed as `std::move(v)`. See BasicWhenAll.
template <Future F>
BasicWhenAll<detail::VecBranches<F>> when_all(std::vector<F>&& futs) {
  return detail::combine<BasicWhenAll>("spool::when_all", std::move(futs));
}

/// Refuses a named vector at compile time: write `when_all(std::move(v))`.
template <Future F>
BasicWhenAll<detail::VecBranches<F>> when_all(std::vector<F>& futs) {
  static_assert(detail::all_moved_in<std::vector<F>&>,
                "spool::when_all: pass the vector by std::move(...); it takes its futures over");
  return when_all(std::move(futs));  // after the failed assertion: no further error
}

}  // namespace spool
