// spool::Future: the concept every pollable type satisfies.
#pragma once

#include <type_traits>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool {

/// A future: `f.poll(cx)` returns a `Poll<T>`. A pending poll must have arranged for
/// `cx.waker()` — the latest one — to be woken when polling again can make progress.
/// Polling a future again after it returned ready is a misuse.
///
/// Address stability (C++ has no Pin): a future is movable until it is first polled, never
/// after. A pending leaf may have linked a node that lives inside it into a primitive (a
/// Semaphore's or Notify's waiter list, a timer wheel), which then points into the future;
/// so poll a future where it will stay (`co_await` polls an rvalue in place: a temporary of
/// its full expression, which lives in the coroutine frame until the co_await resumes). spool's
/// leaves check it: moving one after it registered such a node throws std::logic_error, in every
/// build.
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
