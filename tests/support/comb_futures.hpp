// Children for the combinator tests: a wrapper that counts a future's polls and its
// destruction, a value that counts a latch down when destroyed (to wait for an aborted
// task's frame), small Tasks, and a Context over a CountingWaker to poll a combinator by
// hand. The tests live in namespace spool_comb_test, which also names the helpers of the
// other test namespaces they use.
#pragma once

#include <atomic>
#include <latch>
#include <stdexcept>
#include <string>
#include <utility>

#include "spool/spool.hpp"
#include "support/counting_waker.hpp"
#include "support/futures.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_leaf.hpp"

namespace spool_comb_test {

using spool::Context;
using spool::JoinSet;
using spool::Poll;
using spool::Task;
using spool::Waker;
using spool_rt_test::ManualLeaf;
using spool_test::CountingWaker;
using spool_test::ReadyFuture;
using spool_test::Signal;

/// Polls futures by hand with a CountingWaker (the sync tests' HandPoller), so that a test
/// sees each poll's result and how often the polled future woke its parent.
using HandPoll = spool_test::HandPoller;

/// What a Tracked future saw. Atomic: a child may be polled and destroyed on a worker while
/// the test thread reads; the test reads after a join or block_on (seq_cst everywhere).
struct Counts {
  std::atomic<int> polls{0};  // Tracked::poll calls
  std::atomic<int> drops{0};  // destructions of a Tracked that was not moved from
};

/// Polls `F`, counting each poll and its own destruction in a Counts (a moved-from shell
/// counts nothing), so that tests can tell which children were polled and destroyed when.
template <class F>
class Tracked {
 public:
  Tracked(F inner, Counts& counts) : inner_(std::move(inner)), counts_(&counts) {}
  Tracked(Tracked&& other) noexcept
      : inner_(std::move(other.inner_)), counts_(std::exchange(other.counts_, nullptr)) {}
  Tracked& operator=(Tracked&&) = delete;
  ~Tracked() {
    if (counts_ != nullptr) counts_->drops.fetch_add(1);
  }
  auto poll(spool::Context& cx) {
    counts_->polls.fetch_add(1);
    return inner_.poll(cx);
  }

 private:
  F inner_;
  Counts* counts_;
};

/// Counts `latch` down once when destroyed (a moved-from one does not): a Task that holds
/// one as a parameter tells, through the latch, that its frame was destroyed.
class LatchOnDrop {
 public:
  explicit LatchOnDrop(std::latch& latch) noexcept : latch_(&latch) {}
  LatchOnDrop(LatchOnDrop&& other) noexcept : latch_(std::exchange(other.latch_, nullptr)) {}
  LatchOnDrop& operator=(LatchOnDrop&&) = delete;
  ~LatchOnDrop() {
    if (latch_ != nullptr) latch_->count_down();
  }

 private:
  std::latch* latch_;
};

/// The what() of the `E` that `fn()` throws, or "(nothing thrown)".
template <class E, class Fn>
std::string what_thrown(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

/// Ready at once with `v`.
inline spool::Task<int> value(int v) { co_return v; }

/// Waits for `f` (e.g. a Signal's future), then gives `v`.
template <class F>
spool::Task<int> value_after(F f, int v) {
  co_await f;
  co_return v;
}

/// Waits for `f`, then throws std::runtime_error(what).
template <class F>
spool::Task<int> throw_after(F f, std::string what) {
  co_await f;
  throw std::runtime_error(what);
  co_return 0;
}

/// Pending forever while it holds `guard`: ends only by cancellation (the latch tells).
inline spool::Task<int> pending_forever(LatchOnDrop guard) {
  LatchOnDrop local = std::move(guard);
  struct Never {
    spool::Poll<void> poll(spool::Context&) { return spool::pending; }
  };
  Never never;  // named: g++ 12 destroys a braced temporary in co_await twice (docs/core.md)
  co_await never;
  co_return 0;
}

}  // namespace spool_comb_test
