// spool::PendingIoOutlivesDrop: the mark of a byte stream whose dropped pending read or write
// still goes on, and the way a wrapper passes its inner stream's mark on.
#pragma once

#include "spool/config.hpp"

namespace spool {

/// A byte stream whose read or write, dropped while pending, still goes on (fs::File: it
/// runs on the blocking pool) says so with a member `using pending_io_outlives_drop = void;`.
/// spool::codec's framed types refuse such a stream at compile time: they drop pending reads
/// and writes by design (a move, a feed), which would lose or repeat its bytes.
template <class S>
concept PendingIoOutlivesDrop = requires {
  typename S::pending_io_outlives_drop;
};

namespace detail {

// A base for a wrapper of stream S (BufReader<S>): it has S's mark, if S has one.
template <class S, bool = PendingIoOutlivesDrop<S>>
struct PendingIoMarkOf {};
template <class S>
struct PendingIoMarkOf<S, true> {
  using pending_io_outlives_drop = void;
};

}  // namespace detail
}  // namespace spool
