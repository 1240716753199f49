// spool::join when there is no memory for a stolen child's record (fork_join.hpp's
// RemoteRecord): the child's frame is destroyed unrun, and std::bad_alloc is its error. The
// program's nothrow operator new is replaced so that a test can make the next ones fail on
// its thread.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <new>

#include "spool/spool.hpp"
#include "support/rt_drop_counter.hpp"

namespace {
// How many of this thread's next nothrow allocations fail.
thread_local int failing_nothrow_news = 0;
}  // namespace

// As the default one (operator new, nullptr instead of a throw), unless told to fail.
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (failing_nothrow_news > 0) {
    --failing_nothrow_news;
    return nullptr;
  }
  try {
    return ::operator new(size);
  } catch (...) {
    return nullptr;
  }
}

namespace spool_fork_test {
namespace {

using spool::Task;
using spool_rt_test::DropCounter;

// Children that ran. Seq_cst increments by the children, read after block_on returned
// (which orders every child's end before it).
std::atomic<int> runs{0};

Task<int> counted(DropCounter, int v) {
  runs.fetch_add(1);
  co_return v;
}

TEST(JoinNoMemory, AStolenChildWithoutARecordFailsWithBadAllocAndNeverRuns) {
  // A join polled by block_on has no fork deque: it spawns child 1 itself, on this thread,
  // and so allocates its record here.
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::atomic<std::int64_t> drops{0};
  runs = 0;
  auto parent = [&drops]() -> Task<int> {
    auto j = spool::join(counted(DropCounter(drops), 1), counted(DropCounter(drops), 2));
    failing_nothrow_news = 1;  // child 1's record
    auto [a, b] = co_await std::move(j);
    co_return a + b;
  };
  EXPECT_THROW((void)rt.block_on(parent()), std::bad_alloc);
  EXPECT_EQ(failing_nothrow_news, 0);  // the record was asked for
  EXPECT_EQ(drops.load(), 2);          // both frames destroyed
  EXPECT_EQ(runs.load(), 1);           // child 0 ran inline, child 1 never
}

}  // namespace
}  // namespace spool_fork_test
