// Races of the per-child wakers, meant for ThreadSanitizer: rounds of when_all, when_any and
// JoinSet whose children are woken from plain threads while the combinator is polled
// elsewhere. Bounded by a count of rounds; every round checks exact results:
//  - when_all under spool::block_on: every output arrives, and each child is polled at most
//    twice (once at the start, once after its one wake: never because a sibling woke);
//  - when_any over JoinHandles on a multi-thread runtime: the one fired child wins, and every
//    task's frame is destroyed (the losers were aborted, not detached);
//  - JoinSet: every task is joined exactly once, with its own value, by join_next alone or
//    by try_join_next and join_next in turn (a task try_join_next saw pending must still
//    wake join_next).
#include <gtest/gtest.h>

#include <cstdint>
#include <latch>
#include <optional>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"

namespace spool_comb_test {
namespace {

constexpr int kChildren = 8;
constexpr int kRounds = 1000;

// Fires `leaves` from two plain threads (even and odd positions), then joins them.
void fire_from_two_threads(std::vector<ManualLeaf>& leaves) {
  auto fire_every_other = [&leaves](std::size_t first) {
    for (std::size_t i = first; i < leaves.size(); i += 2) leaves[i].fire();
  };
  std::thread even(fire_every_other, 0);
  std::thread odd(fire_every_other, 1);
  even.join();
  odd.join();
}

TEST(CombinatorStress, WhenAllUnderBlockOnWithChildrenWokenFromTwoThreads) {
  for (int round = 0; round < kRounds; ++round) {
    std::vector<ManualLeaf> leaves(kChildren);
    std::vector<Counts> counts(kChildren);
    std::vector<Tracked<Task<int>>> children;
    for (int i = 0; i < kChildren; ++i) children.emplace_back(value_after(leaves[i], i), counts[i]);
    std::thread firer(fire_from_two_threads, std::ref(leaves));
    std::vector<int> outputs = spool::block_on(spool::when_all(std::move(children)));
    firer.join();
    for (int i = 0; i < kChildren; ++i) {
      ASSERT_EQ(outputs[i], i);
      ASSERT_GE(counts[i].polls.load(), 1);
      ASSERT_LE(counts[i].polls.load(), 2) << "child " << i << " polled for a sibling's wake";
      ASSERT_EQ(counts[i].drops.load(), 1);
    }
  }
}

Task<int> value_after_holding(ManualLeaf leaf, int v, LatchOnDrop guard) {
  LatchOnDrop held = std::move(guard);
  co_await leaf;
  co_return v;
}

TEST(CombinatorStress, WhenAnyOfJoinHandlesAbortsTheLosersEveryRound) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  for (int round = 0; round < kRounds; ++round) {
    const int winner = round % kChildren;
    std::vector<ManualLeaf> leaves(kChildren);
    std::latch frames_gone(kChildren);
    std::vector<spool::JoinHandle<int>> handles;
    for (int i = 0; i < kChildren; ++i) {
      handles.push_back(rt.spawn(value_after_holding(leaves[i], i, LatchOnDrop(frames_gone))));
    }
    std::thread firer([&leaves, winner] { leaves[winner].fire(); });
    spool::AnyOf<int> won = spool::block_on(spool::when_any(std::move(handles)));
    firer.join();
    ASSERT_EQ(won.index, static_cast<std::size_t>(winner));
    ASSERT_EQ(won.value, winner);
    frames_gone.wait();  // the winner's frame went with its output, the losers' by abort
  }
}

// One round: a JoinSet of tasks whose leaves two plain threads fire; joins them all, with
// join_next only, or (`try_first`) with try_join_next first and join_next when it gives none.
Task<std::int64_t> join_set_round(bool try_first) {
  JoinSet<int> set;
  std::vector<ManualLeaf> leaves(kChildren);
  for (int i = 0; i < kChildren; ++i) set.spawn(value_after(leaves[i], i));
  std::thread firer(fire_from_two_threads, std::ref(leaves));
  std::int64_t seen = 0;  // bit i: task i was joined
  int joined = 0;
  while (!set.is_empty()) {
    std::optional<int> v = try_first ? set.try_join_next() : std::nullopt;
    if (!v) v = co_await set.join_next();
    if ((seen & (std::int64_t{1} << *v)) != 0) ADD_FAILURE() << "task " << *v << " joined twice";
    seen |= std::int64_t{1} << *v;
    ++joined;
  }
  firer.join();
  co_return joined == kChildren ? seen : -1;
}

TEST(CombinatorStress, JoinSetJoinsEveryTaskOnceWithChildrenWokenFromTwoThreads) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_EQ(rt.block_on(join_set_round(false)), (std::int64_t{1} << kChildren) - 1);
  }
}

TEST(CombinatorStress, TryJoinNextThenJoinNextJoinsEveryTaskOnce) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_EQ(rt.block_on(join_set_round(true)), (std::int64_t{1} << kChildren) - 1);
  }
}

}  // namespace
}  // namespace spool_comb_test
