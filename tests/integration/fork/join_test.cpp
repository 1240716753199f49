// spool::join / join_all: the results of deep and wide fork trees (fib 25, skynet depth 5,
// nqueens 10) on 1, 2 and 4 workers, a current-thread runtime and plain block_on; a root
// joined from block_on (its children spawned); children that borrow the awaiting frame;
// void children and empty joins; the first exception (the siblings cancelled or finished,
// every frame destroyed once, the exception rethrown in the parent); a parent cancelled
// mid-tree; forks around block_in_place; stolen children on the parent's channel; misuse.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "spool/spool.hpp"
#include "support/levels.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_gate.hpp"
#include "support/rt_leaf.hpp"

namespace spool_fork_test {
namespace {

using spool::Task;
using spool_rt_test::DropCounter;

// What an unstolen child costs its join's frame (docs/fork.md): a table pointer, its join,
// its state, its Task and its value; a stolen child's books are kept apart.
static_assert(sizeof(spool::detail::ForkChild<std::uint64_t>) <= 48);
// Destructions counted by DropCounter (seq_cst adds, read once the join or the runtime that
// destroyed the counted frames is done).
using Drops = std::atomic<std::int64_t>;

Task<std::uint64_t> fib(int n) {
  if (n < 2) co_return static_cast<std::uint64_t>(n);
  auto [a, b] = co_await spool::join(fib(n - 1), fib(n - 2));
  co_return a + b;
}

// The node covering leaves num .. num + size - 1 (its value: their sum).
Task<std::uint64_t> skynet(std::uint64_t num, std::uint64_t size) {
  if (size == 1) co_return num;
  size /= 10;
  std::vector<Task<std::uint64_t>> children;
  children.reserve(10);
  for (std::uint64_t i = 0; i < 10; ++i) children.push_back(skynet(num + i * size, size));
  std::uint64_t sum = 0;
  for (std::uint64_t v : co_await spool::join_all(std::move(children))) sum += v;
  co_return sum;
}

constexpr int kQueens = 10;

// Solutions below a partial board: `cols`, `left` and `right` are the columns of the next
// row that the queens placed so far attack (straight, and along each diagonal).
Task<std::uint64_t> nqueens(std::uint32_t cols, std::uint32_t left, std::uint32_t right, int row) {
  if (row == kQueens) co_return 1;
  constexpr std::uint32_t kAll = (1u << kQueens) - 1;
  std::vector<Task<std::uint64_t>> children;
  for (std::uint32_t free = kAll & ~(cols | left | right); free != 0; free &= free - 1) {
    const std::uint32_t bit = free & (~free + 1);
    children.push_back(
        nqueens(cols | bit, ((left | bit) << 1) & kAll, (right | bit) >> 1, row + 1));
  }
  std::uint64_t sum = 0;
  for (std::uint64_t v : co_await spool::join_all(std::move(children))) sum += v;
  co_return sum;
}

// nqueens with its children in a ForkGroup (nothing allocated for them).
Task<std::uint64_t> nqueens_group(std::uint32_t cols, std::uint32_t left, std::uint32_t right,
                                  int row) {
  if (row == kQueens) co_return 1;
  constexpr std::uint32_t kAll = (1u << kQueens) - 1;
  spool::ForkGroup<std::uint64_t, kQueens> children;
  for (std::uint32_t free = kAll & ~(cols | left | right); free != 0; free &= free - 1) {
    const std::uint32_t bit = free & (~free + 1);
    children.fork(
        nqueens_group(cols | bit, ((left | bit) << 1) & kAll, (right | bit) >> 1, row + 1));
  }
  std::uint64_t sum = 0;
  for (std::uint64_t v : co_await children.join()) sum += v;
  co_return sum;
}

// Where a tree runs: a multi-thread runtime of 1, 2 or 4 workers (the root spawned onto a
// worker), a current-thread runtime, or spool::block_on without a runtime.
enum class Where { kOneWorker, kTwoWorkers, kFourWorkers, kCurrentThread, kNoRuntime };

std::string where_name(const ::testing::TestParamInfo<Where>& info) {
  switch (info.param) {
    case Where::kOneWorker:
      return "OneWorker";
    case Where::kTwoWorkers:
      return "TwoWorkers";
    case Where::kFourWorkers:
      return "FourWorkers";
    case Where::kCurrentThread:
      return "CurrentThread";
    case Where::kNoRuntime:
      return "NoRuntime";
  }
  return "?";
}

template <class T>
T run_root(Where where, Task<T> root) {
  if (where == Where::kNoRuntime) return spool::block_on(std::move(root));
  if (where == Where::kCurrentThread) {
    spool::Runtime rt = spool::Builder::current_thread().build();
    return rt.block_on(std::move(root));
  }
  const std::size_t workers = where == Where::kOneWorker ? 1 : where == Where::kTwoWorkers ? 2 : 4;
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(workers).build();
  return rt.block_on(rt.spawn(std::move(root)));
}

class JoinTrees : public ::testing::TestWithParam<Where> {};
INSTANTIATE_TEST_SUITE_P(, JoinTrees,
                         ::testing::Values(Where::kOneWorker, Where::kTwoWorkers,
                                           Where::kFourWorkers, Where::kCurrentThread,
                                           Where::kNoRuntime),
                         where_name);

TEST_P(JoinTrees, Fib25) { EXPECT_EQ(run_root(GetParam(), fib(25)), 75'025u); }

TEST_P(JoinTrees, SkynetDepth5) {
  EXPECT_EQ(run_root(GetParam(), skynet(0, 100'000)), 4'999'950'000u);
}

TEST_P(JoinTrees, Nqueens10InAForkGroup) {
  EXPECT_EQ(run_root(GetParam(), nqueens_group(0, 0, 0, 0)), 724u);
}

TEST_P(JoinTrees, Nqueens10) { EXPECT_EQ(run_root(GetParam(), nqueens(0, 0, 0, 0)), 724u); }

TEST(Join, ARootJoinedFromBlockOnSpawnsItsChildren) {
  // The block_on thread has no fork deque: the children after the first become tasks.
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  EXPECT_EQ(rt.block_on(fib(20)), 6'765u);
  // The spawned children ran on the workers (which count a poll once it returned).
  spool_rt_test::spin_until([&] {
    std::uint64_t polls = 0;
    for (const spool::WorkerMetrics& w : rt.metrics().workers) polls += w.polls;
    return polls > 0;
  });
}

// Yields once (so that it is pending when the join first looks, and may be stolen
// meanwhile), then writes its slot of the awaiting frame's array.
Task<void> write_later(int* slot, int v) {
  co_await spool::yield_now();
  *slot = v;
}

Task<std::int64_t> fill_borrowed_array() {
  std::array<int, 200> values{};  // in this frame, borrowed by every child
  std::vector<Task<void>> children;
  for (int i = 0; i < 200; ++i) children.push_back(write_later(&values[i], 2 * i));
  co_await spool::join_all(std::move(children));
  std::int64_t sum = 0;
  for (int v : values) sum += v;
  co_return sum;
}

TEST(Join, ChildrenBorrowTheAwaitingFrame) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(4).build();
  for (int round = 0; round < 20; ++round) {
    EXPECT_EQ(rt.block_on(rt.spawn(fill_borrowed_array())), std::int64_t{200} * 199);
  }
}

Task<void> nothing() { co_return; }
Task<int> seven() { co_return 7; }

TEST(Join, VoidChildrenGiveMonostateAndEmptyJoinsAreReady) {
  auto both = spool::block_on(spool::join(nothing(), seven()));
  static_assert(std::is_same_v<decltype(both), std::tuple<std::monostate, int>>);
  EXPECT_EQ(std::get<1>(both), 7);

  EXPECT_TRUE(spool::block_on(spool::join_all(std::vector<Task<int>>{})).empty());

  std::vector<Task<void>> voids;
  voids.push_back(nothing());
  voids.push_back(nothing());
  spool::block_on(spool::join_all(std::move(voids)));  // void: nothing to give
}

TEST(Join, AnyFutureIsAChild) {
  auto three = spool::poll_fn([](spool::Context&) { return spool::Poll<int>::ready(3); });
  auto [a, b] = spool::block_on(spool::join(std::move(three), seven()));
  EXPECT_EQ(a + b, 10);
}

Task<int> quick(DropCounter) { co_return 1; }
Task<int> never(DropCounter) {
  co_await spool_rt_test::NeverReady{};
  co_return 0;
}
Task<int> throw_after_yield(DropCounter) {
  co_await spool::yield_now();
  throw std::runtime_error("boom");
}

// Children of every kind around one that throws: the join throws "boom" once each of them
// finished or was cancelled (those waiting forever must be cancelled, or it would hang).
Task<void> join_with_a_thrower(Drops& drops, int width) {
  std::vector<Task<int>> children;
  for (int i = 0; i < width; ++i) {
    if (i == width / 2) {
      children.push_back(throw_after_yield(DropCounter(drops)));
    } else if (i % 2 == 0) {
      children.push_back(quick(DropCounter(drops)));
    } else {
      children.push_back(never(DropCounter(drops)));
    }
  }
  co_await spool::join_all(std::move(children));
}

class JoinErrors : public ::testing::TestWithParam<Where> {};
INSTANTIATE_TEST_SUITE_P(, JoinErrors,
                         ::testing::Values(Where::kTwoWorkers, Where::kFourWorkers,
                                           Where::kCurrentThread, Where::kNoRuntime),
                         where_name);

TEST_P(JoinErrors, TheFirstExceptionReachesTheParentOnceEveryChildIsGone) {
  for (int width : {1, 2, 3, 16, 64}) {  // 1: a lone child, whose join keeps no remote books
    Drops drops{0};
    try {
      run_root(GetParam(), join_with_a_thrower(drops, width));
      ADD_FAILURE() << "the join did not throw";
    } catch (const spool::JoinError& e) {  // the root was a spawned task
      try {
        std::rethrow_exception(e.exception());
      } catch (const std::runtime_error& inner) {
        EXPECT_STREQ(inner.what(), "boom");
      }
    } catch (const std::runtime_error& e) {  // the root was block_on's own future
      EXPECT_STREQ(e.what(), "boom");
    }
    EXPECT_EQ(drops.load(), width) << "width " << width;  // every child's frame, once
  }
}

// A tree of joins 3 deep, 4 wide, whose leaves wait forever once counted as started: the
// middle level joins a ForkGroup, the others join_all.
Task<int> waiting_tree(Drops& drops, std::atomic<int>& leaves, int depth, DropCounter) {
  if (depth == 0) {
    spool_rt_test::bump(leaves);
    co_await spool_rt_test::NeverReady{};
    co_return 0;
  }
  if (depth == 2) {
    spool::ForkGroup<int, 4> group;
    for (int i = 0; i < 4; ++i)
      group.fork(waiting_tree(drops, leaves, depth - 1, DropCounter(drops)));
    co_await group.join();
    co_return 1;
  }
  std::vector<Task<int>> children;
  for (int i = 0; i < 4; ++i) {
    children.push_back(waiting_tree(drops, leaves, depth - 1, DropCounter(drops)));
  }
  co_await spool::join_all(std::move(children));
  co_return 1;
}

TEST(Join, CancellingTheParentMidTreeDestroysEveryFrameOnce) {
  constexpr int kNodes = 1 + 4 + 16 + 64;
  for (std::size_t workers : {1, 2, 4}) {
    Drops drops{0};
    std::atomic<int> leaves{0};  // bumped by each leaf (seq_cst, with notify_all)
    {
      spool::Runtime rt = spool::Builder::multi_thread().worker_threads(workers).build();
      auto root = rt.spawn(waiting_tree(drops, leaves, 3, DropCounter(drops)));
      spool_rt_test::wait_at_least(leaves, 64);
      root.abort();
      try {
        spool::block_on(std::move(root));
        ADD_FAILURE() << "the aborted root finished";
      } catch (const spool::JoinError& e) {
        EXPECT_TRUE(e.is_cancelled());
      }
      EXPECT_EQ(drops.load(), kNodes) << workers << " workers";  // before the runtime goes
    }
    EXPECT_EQ(drops.load(), kNodes) << workers << " workers";
  }
}

Task<int> in_place(int v) {
  spool::block_in_place([] {});
  co_return v;
}

// A child that hands its worker's core over (block_in_place) while its siblings wait in the
// fork deque: they become tasks of their own; and a join after block_in_place, on a thread
// without a core, spawns its children.
Task<int> forks_around_block_in_place() {
  auto [a, b, c] = co_await spool::join(in_place(1), seven(), seven());
  spool::block_in_place([] {});
  auto [d, e] = co_await spool::join(seven(), in_place(2));
  co_return a + b + c + d + e;
}

TEST(Join, ForksAroundBlockInPlace) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  for (int round = 0; round < 50; ++round) {
    EXPECT_EQ(rt.block_on(rt.spawn(forks_around_block_in_place())), 1 + 7 + 7 + 7 + 2);
  }
}

Task<int> sum_after_a_block_in_place() {
  // Child 0 hands the core over while the 16 others wait in the fork deque: they become
  // tasks of their own, on this task's channel.
  std::vector<Task<int>> children;
  children.push_back(in_place(0));
  for (int i = 0; i < 16; ++i) children.push_back(seven());
  int sum = 0;
  for (int v : co_await spool::join_all(std::move(children))) sum += v;
  co_return sum;
}

TEST(Join, StolenChildrenRunOnTheParentsChannel) {
  spool::Runtime rt = spool::Builder::multi_thread()
                          .worker_threads(2)
                          .levels({spool::Level{"high"}, spool::Level{"low"}})
                          .build();
  const spool::ChannelId high = rt.channel("high");
  EXPECT_EQ(rt.block_on(rt.spawn_on(high, sum_after_a_block_in_place())), 16 * 7);
  // The parent's poll and its 16 children's (a worker counts a poll once it returned).
  const spool::RuntimeMetrics m = spool_levels_test::metrics_after(rt, 17);
  ASSERT_EQ(m.channels.size(), 2u);
  EXPECT_EQ(m.channels[1].name, "low");
  EXPECT_EQ(m.channels[1].polled, 0u);   // none ran on the default channel
  EXPECT_GE(m.channels[0].polled, 17u);  // the parent, and its 16 children as tasks
}

Task<int> group_of_three() {
  int base = 10;  // borrowed by every child
  spool::ForkGroup<int, 3> group;
  for (int i = 0; i < 3; ++i) {
    group.fork([](int* b, int v) -> Task<int> {
      co_await spool::yield_now();
      co_return *b + v;
    }(&base, i));
  }
  EXPECT_EQ(group.size(), 3u);
  EXPECT_THROW(group.fork(seven()), std::length_error);  // full: N = 3
  auto values = co_await group.join();
  EXPECT_EQ(values.size(), 3u);
  EXPECT_THROW(group.fork(seven()), std::logic_error);  // joined already
  EXPECT_THROW((void)group.join(), std::logic_error);   // joined once
  co_return values[0] + values[1] + values[2];
}

TEST(Join, AForkGroupHoldsAtMostNChildrenAndIsJoinedOnce) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  EXPECT_EQ(rt.block_on(rt.spawn(group_of_three())), 10 + 11 + 12);
  EXPECT_EQ(spool::block_on(group_of_three()), 10 + 11 + 12);
}

// A moved-from Join refers to no group: polling it throws (it dereferenced a null group).
TEST(Join, AMovedFromForkGroupJoinThrowsWhenPolled) {
  spool::ForkGroup<int, 1> group;
  group.fork(seven());
  auto join = group.join();
  auto moved = std::move(join);
  spool::Waker waker = spool::Waker::noop();
  spool::Context cx(waker);
  try {
    (void)join.poll(cx);
    ADD_FAILURE() << "a moved-from Join was polled without an error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("moved from"), std::string::npos) << e.what();
  }
  auto p = moved.poll(cx);  // the Join it was moved into works
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(std::move(p).value()[0], 7);
}

Task<int> hand_over_then_wait_forever(DropCounter) {
  spool::block_in_place([] {});  // its siblings become tasks of their own (stolen)
  co_await spool_rt_test::NeverReady{};
  co_return 0;
}
Task<int> throw_now(DropCounter) {
  throw std::runtime_error("stolen child failed");
  co_return 0;
}

TEST(Join, AStolenChildsExceptionCancelsTheInlineOnes) {
  // Child 0 waits forever, inline; child 1 runs as a task of its own and throws: the join
  // must hear of it, cancel child 0 and throw (not wait for child 0 forever).
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  for (int round = 0; round < 20; ++round) {
    Drops drops{0};
    auto parent = [&drops]() -> Task<void> {
      co_await spool::join(hand_over_then_wait_forever(DropCounter(drops)),
                           throw_now(DropCounter(drops)));
    };
    try {
      rt.block_on(rt.spawn(parent()));
      ADD_FAILURE() << "the join did not throw";
    } catch (const spool::JoinError& e) {
      try {
        std::rethrow_exception(e.exception());
      } catch (const std::runtime_error& inner) {
        EXPECT_STREQ(inner.what(), "stolen child failed");
      }
    }
    EXPECT_EQ(drops.load(), 2);
  }
}

// Records, when destroyed, how many counted frames were destroyed before it.
struct DeathOrderProbe {
  const Drops& drops;
  std::int64_t& seen;
  ~DeathOrderProbe() { seen = drops.load(); }
};

Task<void> group_then_a_local(Drops& drops, std::int64_t& seen) {
  spool::ForkGroup<int, 2> group;
  DeathOrderProbe local{drops, seen};  // declared after the group: destroyed before it
  group.fork(never(DropCounter(drops)));
  group.fork(never(DropCounter(drops)));
  co_await group.join();
}

TEST(Join, AForkGroupsCancelledJoinEndsItsChildrenBeforeTheLocalsAfterIt) {
  Drops drops{0};
  std::int64_t seen = -1;
  {
    Task<void> t = group_then_a_local(drops, seen);
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    ASSERT_TRUE(t.poll(cx).is_pending());  // both children pending, inline
  }                                        // the task is cancelled: its frame goes
  EXPECT_EQ(seen, 2);  // the children went before the local that they might borrow
  EXPECT_EQ(drops.load(), 2);
}

TEST(Join, PollingAgainAfterItFinishedThrows) {
  auto j = spool::join(seven(), seven());
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  ASSERT_TRUE(j.poll(cx).is_ready());
  EXPECT_THROW((void)j.poll(cx), std::logic_error);
}

TEST(Join, MovingItAfterItsFirstPollThrows) {
  Drops drops{0};
  auto j = spool::join(never(DropCounter(drops)), seven());
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  ASSERT_FALSE(j.poll(cx).is_ready());
  EXPECT_THROW({ auto moved = std::move(j); }, std::logic_error);
  auto fresh = spool::join(seven(), seven());
  auto moved = std::move(fresh);  // before the first poll: fine
  EXPECT_EQ(std::get<0>(spool::block_on(std::move(moved))), 7);
}

}  // namespace
}  // namespace spool_fork_test
