// spool::Barrier: a generation completes when n futures have arrived (exactly one leader),
// the barrier is reused generation after generation, a cancelled waiter's arrival still
// counts, and n = 0 acts as 1; stepped by hand, then with tasks of both flavours.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Barrier;
using spool_test::HandPoller;

TEST(Barrier, TheLastArrivalLeadsAndReleasesTheOthers) {
  Barrier b(3);
  HandPoller p1, p2, p3;
  auto w1 = b.wait();
  auto w2 = b.wait();
  auto w3 = b.wait();
  EXPECT_TRUE(p1.poll(w1).is_pending());
  EXPECT_TRUE(p2.poll(w2).is_pending());
  auto third = p3.poll(w3);
  ASSERT_TRUE(third.is_ready());
  EXPECT_TRUE(third.value().is_leader());
  EXPECT_EQ(p1.wakes(), 1);
  EXPECT_EQ(p2.wakes(), 1);
  EXPECT_FALSE(p1.poll(w1).value().is_leader());
  EXPECT_FALSE(p2.poll(w2).value().is_leader());
}

TEST(Barrier, ANextGenerationWaitsForItsOwnArrivals) {
  Barrier b(2);
  HandPoller p1, p2, p3;
  auto a = b.wait();
  auto c = b.wait();
  EXPECT_TRUE(p1.poll(a).is_pending());
  EXPECT_TRUE(p2.poll(c).value().is_leader());  // generation 1 done
  auto next = b.wait();
  EXPECT_TRUE(p3.poll(next).is_pending());  // generation 2: one of two
  EXPECT_FALSE(p1.poll(a).value().is_leader());
  EXPECT_TRUE(p3.poll(next).is_pending());
  EXPECT_EQ(p3.wakes(), 0);
}

TEST(Barrier, ACancelledWaiterStillCounts) {
  Barrier b(2);
  HandPoller p1, p2;
  {
    auto gone = b.wait();
    EXPECT_TRUE(p1.poll(gone).is_pending());
  }  // arrived, then destroyed
  auto w = b.wait();
  EXPECT_TRUE(p2.poll(w).value().is_leader());
}

// A moved-from wait cannot arrive a second time.
TEST(Barrier, AMovedFromWaitCannotArrive) {
  Barrier b(2);
  HandPoller p1;
  auto w = b.wait();
  auto moved = std::move(w);
  EXPECT_THROW((void)p1.poll(w), std::logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(p1.poll(moved).is_pending());          // one arrival, not two
  EXPECT_THROW({ auto again = std::move(moved); }, std::logic_error);  // moved while waiting
  HandPoller p2;
  auto other = b.wait();
  EXPECT_TRUE(p2.poll(other).value().is_leader());
  EXPECT_FALSE(p1.poll(moved).value().is_leader());
}

TEST(Barrier, ZeroActsAsOne) {
  Barrier b(0);
  EXPECT_TRUE(spool::block_on(b.wait()).is_leader());
  EXPECT_TRUE(spool::block_on(b.wait()).is_leader());
}

class BarrierAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(BarrierAnyFlavor);

constexpr int kTasks = 4;
constexpr int kGenerations = 200;

// Each task crosses the barrier kGenerations times and checks that nobody ran ahead: the
// count of arrivals it sees after each crossing is at least the generation's total.
spool::Task<int> cross(Barrier* b, std::atomic<int>* arrivals) {
  int led = 0;
  for (int g = 1; g <= kGenerations; ++g) {
    arrivals->fetch_add(1, std::memory_order_relaxed);  // relaxed: the barrier orders it
    if ((co_await b->wait()).is_leader()) ++led;
    EXPECT_GE(arrivals->load(std::memory_order_relaxed), g * kTasks);
  }
  co_return led;
}

TEST_P(BarrierAnyFlavor, EveryGenerationHasExactlyOneLeader) {
  auto rt = build();
  Barrier b(kTasks);
  // Incremented (relaxed) by each task before each wait; the barrier's lock and Notify order
  // every increment of a generation before the loads after it (see cross).
  std::atomic<int> arrivals{0};
  std::vector<spool::JoinHandle<int>> tasks;
  for (int i = 0; i < kTasks; ++i) tasks.push_back(rt.spawn(cross(&b, &arrivals)));
  int leaders = 0;
  for (auto& t : tasks) leaders += wait(rt, std::move(t));
  EXPECT_EQ(leaders, kGenerations);
}

}  // namespace
