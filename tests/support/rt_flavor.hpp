// Runtime flavours for tests whose promise holds on both (as tokio's rt_common): a
// value-parameterised fixture, RtFlavorTest, whose param is the Flavor to build.
//
//   class SpawnAnyFlavor : public spool_rt_test::RtFlavorTest {};
//   SPOOL_RT_INSTANTIATE_FLAVORS(SpawnAnyFlavor);
//   TEST_P(SpawnAnyFlavor, FromOutside) {
//     auto rt = build();
//     EXPECT_EQ(wait(rt, rt.spawn(add(2, 3))), 5);
//   }
//
// gives the ctest names SpawnAnyFlavor.FromOutside/MultiThread and .../CurrentThread.
// Tests that only one flavour promises (block_in_place, work stealing, "tasks run only inside
// block_on") stay plain TESTs.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <latch>
#include <ostream>
#include <string>
#include <thread>
#include <utility>

#include "spool/spool.hpp"
#include "support/rt_leaf.hpp"

namespace spool_rt_test {

enum class Flavor { kMultiThread, kCurrentThread };

/// "MultiThread" / "CurrentThread": the suffix of each parameterised test's name.
inline std::string flavor_name(Flavor f) {
  return f == Flavor::kMultiThread ? "MultiThread" : "CurrentThread";
}

/// Prints the param as its name (gtest's --gtest_list_tests and failure messages).
inline void PrintTo(Flavor f, std::ostream* os) { *os << flavor_name(f); }

/// A Builder of flavour `f`. `workers` is the multi-thread runtime's worker_threads (a
/// current-thread runtime refuses that setting: its one thread is the block_on caller).
inline spool::Builder flavor_builder(Flavor f, std::size_t workers = 2) {
  if (f == Flavor::kCurrentThread) return spool::Builder::current_thread();
  spool::Builder b = spool::Builder::multi_thread();
  b.worker_threads(workers);
  return b;
}

class RtFlavorTest : public ::testing::TestWithParam<Flavor> {
 protected:
  Flavor flavor() const { return GetParam(); }
  bool is_multi_thread() const { return GetParam() == Flavor::kMultiThread; }

  /// The builder of this test's flavour (to add settings before build()).
  spool::Builder builder(std::size_t workers = 2) const {
    return flavor_builder(GetParam(), workers);
  }
  /// A runtime of this test's flavour (`workers` worker threads if multi-thread).
  spool::Runtime build(std::size_t workers = 2) const { return builder(workers).build(); }

  /// Waits on the calling (plain, non-runtime) thread for `fut` — typically a JoinHandle.
  /// Multi-thread: spool::block_on, outside the runtime, while the workers run the tasks.
  /// Current-thread: rt.block_on, since tasks run only while a thread is inside it.
  template <class F>
  static decltype(auto) wait(spool::Runtime& rt, Flavor f, F&& fut) {
    if (f == Flavor::kMultiThread) return spool::block_on(std::forward<F>(fut));
    return rt.block_on(std::forward<F>(fut));
  }
  template <class F>
  decltype(auto) wait(spool::Runtime& rt, F&& fut) const {
    return wait(rt, GetParam(), std::forward<F>(fut));
  }

  /// Returns once `leaf` has been pending at least `n` times (its task stored its waker).
  /// Multi-thread: blocks on the leaf while a worker polls the task. Current-thread: drives
  /// the runtime (rt.block_on of a root that yields until then), since nothing else does.
  void until_pending(spool::Runtime& rt, const ManualLeaf& leaf, int n = 1) const {
    if (is_multi_thread()) return leaf.wait_pending(n);
    rt.block_on(root_yielding_until([&leaf, n] { return leaf.pending_polls() >= n; }));
  }

  /// Returns once `latch` reached zero (its tasks counted it down). Multi-thread: waits on
  /// it. Current-thread: drives the runtime until then, as until_pending does.
  void until_done(spool::Runtime& rt, std::latch& latch) const {
    if (is_multi_thread()) return latch.wait();
    rt.block_on(root_yielding_until([&latch] { return latch.try_wait(); }));
  }

  /// True once `done()` is, false after `max_rounds` rounds without it: a wait bounded by
  /// count, so a broken promise fails the test instead of hanging it. Multi-thread: checks,
  /// then yields the CPU to the workers, each round. Current-thread: drives the runtime, a
  /// root that yields once a round.
  template <class Pred>
  bool within_rounds(spool::Runtime& rt, Pred done, int max_rounds = kDefaultRounds) const {
    if (!is_multi_thread()) return rt.block_on(root_yielding_within(done, max_rounds));
    for (int i = 0; i < max_rounds && !done(); ++i) std::this_thread::yield();
    return done();
  }
  /// within_rounds's bound: far more rounds than a task that is already scheduled needs.
  static constexpr int kDefaultRounds = 1'000'000;

 private:
  // A root future that yields (letting the current-thread runtime's tasks run) until `done()`.
  template <class Pred>
  static spool::Task<void> root_yielding_until(Pred done) {
    while (!done()) co_await spool::yield_now();
  }
  template <class Pred>
  static spool::Task<bool> root_yielding_within(Pred done, int max_rounds) {
    for (int i = 0; i < max_rounds && !done(); ++i) co_await spool::yield_now();
    co_return done();
  }
};

/// The test-name generator of INSTANTIATE_TEST_SUITE_P.
struct FlavorName {
  std::string operator()(const ::testing::TestParamInfo<Flavor>& info) const {
    return flavor_name(info.param);
  }
};

}  // namespace spool_rt_test

/// Instantiates the TEST_Ps of `suite` (a class deriving from RtFlavorTest) for both
/// flavours, named <suite>.<test>/MultiThread and <suite>.<test>/CurrentThread.
#define SPOOL_RT_INSTANTIATE_FLAVORS(suite)                                            \
  INSTANTIATE_TEST_SUITE_P(, suite,                                                    \
                           ::testing::Values(::spool_rt_test::Flavor::kMultiThread,    \
                                             ::spool_rt_test::Flavor::kCurrentThread), \
                           ::spool_rt_test::FlavorName())
