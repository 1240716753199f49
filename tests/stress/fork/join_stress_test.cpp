// spool::join under stealing, for ThreadSanitizer: a binary fork tree of 10^6 children on 4
// workers (thieves race the owners' pops for the last item of a deque all the time), wide
// joins whose children several thieves take at once (they race to build the join's remote
// books), and trees whose leaves throw or wait while thieves hold their siblings (the first
// exception cancels stolen children; every frame is destroyed once). Bounded by count.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"

namespace spool_fork_stress_test {
namespace {

using spool::Task;
using spool_rt_test::DropCounter;
using Drops = std::atomic<std::int64_t>;  // see DropCounter

// The number of leaves below: a binary tree of joins `depth` deep (2^depth leaves, and
// 2^(depth+1) - 2 children in all).
Task<std::uint64_t> binary_tree(int depth) {
  if (depth == 0) co_return 1;
  auto [a, b] = co_await spool::join(binary_tree(depth - 1), binary_tree(depth - 1));
  co_return a + b;
}

TEST(JoinStress, AMillionChildrenWithStealing) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(4).build();
  // 2^20 - 2 + ... : depth 19 gives 2^20 - 2 = 1,048,574 children.
  EXPECT_EQ(rt.block_on(rt.spawn(binary_tree(19))), std::uint64_t{1} << 19);
  std::uint64_t steals = 0;
  for (const spool::WorkerMetrics& w : rt.metrics().workers) steals += w.steals;
  EXPECT_GT(steals, 0u);  // the other workers took part
}

// Counts itself if it runs on another thread than its join's (a thief took it), then
// yields, so that it is pending at the join's first look while idle workers steal its
// siblings.
Task<std::uint64_t> count_thief_then_yield(std::thread::id owner, std::atomic<int>* stolen,
                                           std::uint64_t v) {
  if (std::this_thread::get_id() != owner) stolen->fetch_add(1);
  co_await spool::yield_now();
  co_return v;
}

// The join's first child, which its own worker runs inline once the others are offered:
// holds that worker until a thief started one of them, so that every round has thieves
// racing the owner, however loaded the machine (a thief's wake-up is the only wait).
Task<std::uint64_t> hold_until_stolen(std::atomic<int>* stolen) {
  while (stolen->load() == 0) std::this_thread::yield();
  co_return 0;
}

Task<std::uint64_t> wide_join(std::uint64_t width) {
  std::atomic<int> stolen{0};
  const std::thread::id owner = std::this_thread::get_id();
  std::vector<Task<std::uint64_t>> children;
  children.push_back(hold_until_stolen(&stolen));
  for (std::uint64_t i = 1; i < width; ++i) {
    children.push_back(count_thief_then_yield(owner, &stolen, i));
  }
  std::uint64_t sum = 0;
  for (std::uint64_t v : co_await spool::join_all(std::move(children))) sum += v;
  co_return sum;
}

TEST(JoinStress, SeveralThievesTakeChildrenOfOneJoinAtOnce) {
  // Three idle workers steal from each join's 31 offered children while its own worker
  // polls them in turn; whichever of them first needs the join's remote books builds them.
  constexpr std::uint64_t kWidth = 32;
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(4).build();
  for (int round = 0; round < 300; ++round) {
    EXPECT_EQ(rt.block_on(rt.spawn(wide_join(kWidth))), kWidth * (kWidth - 1) / 2);
  }
  std::uint64_t steals = 0;
  for (const spool::WorkerMetrics& w : rt.metrics().workers) steals += w.steals;
  EXPECT_GE(steals, 300u);  // at least one per round (hold_until_stolen)
}

// A leaf that throws if it is leaf number `thrower`, after a yield (so its siblings may be
// stolen meanwhile); the others yield and give 1.
Task<std::uint64_t> leaf(int index, int thrower, DropCounter) {
  co_await spool::yield_now();
  if (index == thrower) throw std::runtime_error("leaf failed");
  co_return 1;
}

// Frames made and destroyed: a node cancelled before it ran never made its children.
struct Frames {
  Drops made{0};       // seq_cst adds by counted(); read once the join threw
  Drops destroyed{0};  // see DropCounter
  DropCounter counted() {
    made.fetch_add(1);
    return DropCounter(destroyed);
  }
};

Task<std::uint64_t> failing_tree(Frames& f, int depth, int first, int thrower, DropCounter) {
  if (depth == 0) co_return co_await leaf(first, thrower, f.counted());
  const int half = 1 << (depth - 1);
  auto [a, b] =
      co_await spool::join(failing_tree(f, depth - 1, first, thrower, f.counted()),
                           failing_tree(f, depth - 1, first + half, thrower, f.counted()));
  co_return a + b;
}

TEST(JoinStress, ExceptionsCancelStolenSiblings) {
  constexpr int kDepth = 8;  // 256 leaves
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(4).build();
  for (int round = 0; round < 100; ++round) {
    Frames frames;
    const int thrower = (round * 37) % (1 << kDepth);
    try {
      (void)rt.block_on(rt.spawn(failing_tree(frames, kDepth, 0, thrower, frames.counted())));
      ADD_FAILURE() << "round " << round << ": no exception";
    } catch (const spool::JoinError& e) {
      EXPECT_TRUE(e.is_exception());
    }
    // Every frame made was destroyed once (cancelled or finished) before the join threw.
    EXPECT_EQ(frames.destroyed.load(), frames.made.load()) << "round " << round;
    EXPECT_GE(frames.made.load(), kDepth + 2) << "round " << round;  // down to the thrower
  }
}

}  // namespace
}  // namespace spool_fork_stress_test
