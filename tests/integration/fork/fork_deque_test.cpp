// The fork deque (spool/detail/fork_deque.hpp) on one thread: the owner takes the newest
// item back, a thief the oldest, a full deque refuses, with either kind of fences; and
// fork_pop refuses a deque that block_in_place spilled since fork_site handed it out, even
// with items in it (they may be another thread's by then); and a runtime's workers fence
// asymmetrically wherever the system offers membarrier.
#include "spool/detail/fork_deque.hpp"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#endif

#include <array>

#include "spool/spool.hpp"

namespace {

using spool::detail::ForkDeque;
using spool::detail::ForkItem;
using spool::detail::ForkSite;
using spool::detail::WorkStealingDeque;

TEST(ForkDeque, TheOwnerTakesTheNewestAThiefTheOldestAndAFullDequeRefuses) {
  std::array<ForkItem, 3> items{};
  WorkStealingDeque<2> deque;
  bool was_empty = false;
  ASSERT_TRUE(deque.push(&items[0], was_empty));
  EXPECT_TRUE(was_empty);
  ASSERT_TRUE(deque.push(&items[1], was_empty));
  EXPECT_FALSE(was_empty);
  EXPECT_FALSE(deque.push(&items[2], was_empty));  // full
  EXPECT_EQ(deque.steal(), &items[0]);
  EXPECT_EQ(deque.pop(), &items[1]);
  EXPECT_EQ(deque.pop(), nullptr);
  EXPECT_TRUE(deque.is_empty());
}

TEST(ForkDeque, WithAsymmetricFencesTheOwnerAndAThiefTakeTheirEnds) {
  // Where the system has no membarrier, the deque falls back to seq_cst accesses, as a
  // runtime's would.
  const bool asymmetric = spool::detail::enable_asymmetric_fences();
  std::array<ForkItem, 3> items{};
  WorkStealingDeque<4> deque(asymmetric);
  bool was_empty = false;
  for (ForkItem& item : items) ASSERT_TRUE(deque.push(&item, was_empty));
  // The heavy fence, if any (a kernel out of memory may refuse it: a null here, then).
  EXPECT_EQ(deque.steal(), &items[0]);
  EXPECT_EQ(deque.pop(), &items[2]);  // the light one
  EXPECT_EQ(deque.pop(), &items[1]);  // the last item: raced for on top_
  EXPECT_EQ(deque.steal(), nullptr);
  EXPECT_EQ(deque.pop(), nullptr);
}

TEST(ForkDeque, ForkPopRefusesADequeSpilledSinceForkSite) {
  ForkItem item{};
  ForkDeque deque;
  ForkSite site{};
  site.deque = &deque;
  site.spills = deque.spills();
  bool was_empty = false;
  ASSERT_TRUE(deque.push(&item, was_empty));
  EXPECT_EQ(spool::detail::fork_pop(site), &item);  // not spilled: the item comes back
  ASSERT_TRUE(deque.push(&item, was_empty));
  deque.count_spill();
  EXPECT_EQ(spool::detail::fork_pop(site), nullptr);  // spilled: not this thread's any more
  EXPECT_EQ(deque.pop(), &item);
}

TEST(ForkDeque, ARuntimesWorkersFenceAsymmetricallyWhereMembarrierIsOffered) {
#if defined(__linux__) && defined(SYS_membarrier)
  const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    GTEST_SKIP() << "no membarrier private expedited here: workers fence with seq_cst";
  }
#else
  GTEST_SKIP() << "no membarrier on this system: workers fence with seq_cst";
#endif
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  const bool asymmetric = rt.block_on(rt.spawn([]() -> spool::Task<bool> {
    spool::detail::ForkDeque* forks = spool::detail::this_thread_forks;  // on a worker
    co_return forks != nullptr && forks->asymmetric();
  }()));
  EXPECT_TRUE(asymmetric);
}

}  // namespace
