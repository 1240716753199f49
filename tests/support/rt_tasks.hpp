// Small tasks that many runtime tests spawn, and a lookup in a runtime's task list.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <latch>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_leaf.hpp"

namespace spool_rt_test {

/// Returns `v` on its first poll.
inline spool::Task<int> value(int v) { co_return v; }

/// Sets `*flag` (seq_cst: the test reads it after a join or the runtime's end).
inline spool::Task<void> set_flag(std::atomic<bool>* flag) {
  flag->store(true);
  co_return;
}

/// Finishes when `leaf` is fired.
inline spool::Task<void> await_leaf(ManualLeaf leaf) { co_await leaf; }

/// Never finishes; counts one drop when its frame is destroyed (by an abort or a shutdown).
inline spool::Task<void> wait_forever(DropCounter) { co_await NeverReady{}; }

/// Polls `*inner` and counts down `first_pending` the first time it is pending, so that
/// another thread knows the future registered its waker.
template <spool::Future F>
struct SignalWhenPending {
  using T = spool::future_output_t<F>;
  F* inner;
  std::latch* first_pending;
  bool signalled = false;
  spool::Poll<T> poll(spool::Context& cx) {
    spool::Poll<T> p = inner->poll(cx);
    if (p.is_pending() && !signalled) {
      signalled = true;
      first_pending->count_down();
    }
    return p;
  }
};

/// The snapshot of task `id` in `all`, or nullptr.
inline const spool::TaskSnapshot* find(const std::vector<spool::TaskSnapshot>& all,
                                       std::uint64_t id) {
  auto it = std::find_if(all.begin(), all.end(),
                         [id](const spool::TaskSnapshot& s) { return s.id == id; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace spool_rt_test
