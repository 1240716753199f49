// select(a, b): a two-branch combinator that polls two futures by reference and finishes
// with whichever is ready first (the first one when both are). The loser is left as it
// is — pending, with the waker of its last poll stored — and stays with the caller.
#pragma once

#include <type_traits>
#include <utility>
#include <variant>

#include "spool/combinators/branch_output.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"

namespace spool_test {

template <spool::Future A, spool::Future B>
class Select {
 public:
  using OutA = spool::branch_output_t<A>;
  using OutB = spool::branch_output_t<B>;
  // index 0: `a` finished first; index 1: `b` did.
  using Output = std::variant<OutA, OutB>;

  Select(A& a, B& b) : a_(a), b_(b) {}

  spool::Poll<Output> poll(spool::Context& cx) {
    if (auto p = a_.poll(cx); p.is_ready()) return ready<0>(std::move(p));
    if (auto p = b_.poll(cx); p.is_ready()) return ready<1>(std::move(p));
    return spool::pending;
  }

 private:
  template <std::size_t I, class P>
  static spool::Poll<Output> ready(P&& p) {
    if constexpr (std::is_void_v<typename std::remove_cvref_t<P>::value_type>) {
      return spool::Poll<Output>::ready(std::in_place_index<I>);
    } else {
      return spool::Poll<Output>::ready(std::in_place_index<I>, std::move(p).value());
    }
  }

  A& a_;
  B& b_;
};

template <spool::Future A, spool::Future B>
Select<A, B> select(A& a, B& b) {
  return Select<A, B>(a, b);
}

}  // namespace spool_test
