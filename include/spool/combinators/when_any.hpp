// spool::when_any / spool::select: wait for the first of several futures; cancel the rest.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/combinators/branch_output.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/children.hpp"
#include "spool/detail/moved_in.hpp"

namespace spool {

/// The future of `when_any(...)`: ready with the first child to be ready — a std::variant
/// whose index() is the winner's position (or an AnyOf for a vector; see branch_output).
/// Children woken together are polled in order, the first ready wins (biased); the losers
/// are cancelled (a JoinHandle is aborted) before the result is returned; a child whose poll
/// throws wins with its exception. An empty vector throws std::invalid_argument at the first
/// poll. Waking, cancellation and moving: docs/combinators.md.
template <class Branches>
class [[nodiscard]] BasicWhenAny : public detail::Combinator<Branches> {
  using Base = detail::Combinator<Branches>;

 public:
  /// What the future produces.
  using Output = typename Branches::AnyOutput;
  /// Takes the children over.
  using Base::Base;

  /// Polls the children woken since the last poll (all of them at the first), until one
  /// is ready.
  Poll<Output> poll(Context& cx) {
    if (this->children_.branches().size() == 0) {
      throw std::invalid_argument("spool::when_any of no future: nothing can complete");
    }
    std::optional<std::size_t> winner;
    this->children_.poll(cx, [&winner](std::size_t i) {
      winner = i;
      return true;
    });
    if (!winner) return pending;
    auto out = Poll<Output>::ready(this->children_.branches().take_any(*winner));
    this->children_.finish();  // the losers go before the result is handed out
    return out;
  }
};

/// when_any of a list of futures of any types: a std::variant of their outputs.
template <Future... Fs>
using WhenAny = BasicWhenAny<detail::TupleBranches<Fs...>>;

/// Waits for the first of `futs` (any Futures: Tasks, JoinHandles, leaves) and gives a
/// `std::variant` holding the winner's output at the winner's index; the losers are
/// cancelled (JoinHandles aborted) before it returns. The futures are moved in: a named one
/// is passed as `std::move(f)` (an lvalue is refused at compile time; unlike tokio's
/// `select!`, which borrows, a loser is destroyed). See BasicWhenAny.
template <Future... Fs>
WhenAny<std::decay_t<Fs>...> when_any(Fs&&... futs) {
  static_assert(detail::all_moved_in<Fs...>,
                "spool::when_any: pass futures by std::move(...); it takes them over");
  // Every one is an rvalue (asserted): see when_all.
  return detail::combine<BasicWhenAny>("spool::when_any", std::move(futs)...);
}

/// Another name for when_any (tokio's select): the same function, the same future.
template <Future... Fs>
WhenAny<std::decay_t<Fs>...> select(Fs&&... futs) {
  static_assert(detail::all_moved_in<Fs...>,
                "spool::select: pass futures by std::move(...); it takes them over");
  return when_any(std::move(futs)...);  // rvalues (asserted): see when_all
}

/// Waits for the first of `futs` and gives its index and output (AnyOf); the others are
/// cancelled before it returns. The vector is moved in: a named one is passed as
/// `std::move(v)`. See BasicWhenAny.
template <Future F>
BasicWhenAny<detail::VecBranches<F>> when_any(std::vector<F>&& futs) {
  return detail::combine<BasicWhenAny>("spool::when_any", std::move(futs));
}

/// Refuses a named vector at compile time: write `when_any(std::move(v))`.
template <Future F>
BasicWhenAny<detail::VecBranches<F>> when_any(std::vector<F>& futs) {
  static_assert(detail::all_moved_in<std::vector<F>&>,
                "spool::when_any: pass the vector by std::move(...); it takes its futures over");
  return when_any(std::move(futs));  // after the failed assertion: no further error
}

}  // namespace spool
