// poll_held: one poll of an operation a wrapper keeps between its own polls (a framed
// type's or a BufWriter's pending read or write).
#pragma once

#include <optional>

#include "spool/config.hpp"
#include "spool/core/context.hpp"

namespace spool::detail {

/// Polls the future in `op` (engaged). Pending, it stays there for the next poll; ready or
/// throwing, `op` is emptied first (a finished or failed operation is never polled again,
/// and the next call of the wrapper starts afresh).
template <class F>
auto poll_held(std::optional<F>& op, Context& cx) -> decltype(op->poll(cx)) {
  try {
    auto p = op->poll(cx);
    if (!p.is_pending()) op.reset();
    return p;
  } catch (...) {
    op.reset();
    throw;
  }
}

}  // namespace spool::detail
