// spool::Future: the concept every pollable type satisfies.
#pragma once

#include <type_traits>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool {

/// A future: `f.poll(cx)` returns a `Poll<T>`. A pending poll must have arranged for
/// `cx.waker()` — the latest one — to be woken when polling again can make progress.
/// Polling a future again after it returned ready is a misuse.
template <class F>
concept Future = requires(F& f, Context& cx) {
  {f.poll(cx)};
  requires is_poll_v<decltype(f.poll(cx))>;
};

/// The type a Future produces when ready.
template <Future F>
using future_output_t =
    typename decltype(std::declval<F&>().poll(std::declval<Context&>()))::value_type;

}  // namespace spool
