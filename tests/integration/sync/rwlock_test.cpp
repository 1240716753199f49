// spool::RwLock: shared readers, an exclusive writer, a waiting writer not starved by a stream
// of readers, cancellation of a waiting writer, stepped by hand; then readers and writers
// on both runtime flavours.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::RwLock;
using spool::RwLockRead;
using spool::RwLockReadGuard;
using spool::RwLockWrite;
using spool::RwLockWriteGuard;
using spool_test::HandPoller;

static_assert(std::is_same_v<decltype(*std::declval<RwLockReadGuard<int>&>()), const int&>,
              "a read guard gives const access");
static_assert(std::is_same_v<decltype(*std::declval<RwLockWriteGuard<int>&>()), int&>);

TEST(RwLock, ReadersShareAWriterExcludes) {
  RwLock<int> l(1);
  std::optional<RwLockReadGuard<int>> r1 = l.try_read();
  std::optional<RwLockReadGuard<int>> r2 = l.try_read();
  ASSERT_TRUE(r1 && r2);
  EXPECT_EQ(**r1 + **r2, 2);
  EXPECT_FALSE(l.try_write().has_value());
  r1.reset();
  r2.reset();
  {
    RwLockWriteGuard<int> w = spool::block_on(l.write());
    *w = 5;
    EXPECT_FALSE(l.try_read().has_value());
    EXPECT_FALSE(l.try_write().has_value());
  }
  EXPECT_EQ(*spool::block_on(l.read()), 5);
}

TEST(RwLock, AWaitingWriterIsNotStarvedByNewReaders) {
  RwLock<int> l(0);
  HandPoller writer_party, reader_party;
  std::optional<RwLockReadGuard<int>> early_reader = l.try_read();
  RwLockWrite<int> writer = l.write();
  EXPECT_TRUE(writer_party.poll(writer).is_pending());

  // Readers arriving now queue behind the writer, though only readers hold the lock.
  EXPECT_FALSE(l.try_read().has_value());
  std::vector<std::unique_ptr<RwLockRead<int>>> late;
  for (int i = 0; i < 3; ++i) {
    late.push_back(std::make_unique<RwLockRead<int>>(l.read()));
    EXPECT_TRUE(reader_party.poll(*late.back()).is_pending());
  }
  early_reader.reset();
  EXPECT_EQ(writer_party.wakes(), 1);
  EXPECT_EQ(reader_party.wakes(), 0);
  {
    auto w = writer_party.poll(writer);
    ASSERT_TRUE(w.is_ready());
    *w.value() = 9;
  }  // the writer unlocks: all the queued readers get in together
  EXPECT_EQ(reader_party.wakes(), 3);
  std::vector<RwLockReadGuard<int>> readers;
  for (auto& r : late) {
    auto g = reader_party.poll(*r);
    ASSERT_TRUE(g.is_ready());
    EXPECT_EQ(*g.value(), 9);
    readers.push_back(std::move(g).value());
  }
}

TEST(RwLock, ACancelledWriterLetsTheReadersBehindItIn) {
  RwLock<int> l(0);
  HandPoller writer_party, reader_party;
  std::optional<RwLockReadGuard<int>> held = l.try_read();
  auto writer = std::make_unique<RwLockWrite<int>>(l.write());
  RwLockRead<int> reader = l.read();
  EXPECT_TRUE(writer_party.poll(*writer).is_pending());  // collected all but one permit
  EXPECT_TRUE(reader_party.poll(reader).is_pending());
  writer.reset();
  EXPECT_EQ(reader_party.wakes(), 1);
  EXPECT_TRUE(reader_party.poll(reader).is_ready());
  held.reset();
  EXPECT_TRUE(l.try_write().has_value());  // nothing was lost
}

TEST(RwLockDeathTest, DestroyedWhileLockedAbortsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        auto l = std::make_unique<spool::RwLock<int>>(1);
        auto r = l->try_read();
        l.reset();
      },
      "spool::RwLock destroyed while it is read- or write-locked");
  EXPECT_DEATH(
      {
        auto l = std::make_unique<spool::RwLock<int>>(1);
        auto w = l->try_write();
        l.reset();
      },
      "spool::RwLock destroyed while it is read- or write-locked");
}

TEST(RwLock, GuardMisuseIsAClearError) {
  RwLock<int> l(0);
  RwLockWriteGuard<int> w = *l.try_write();
  w.unlock();
  EXPECT_THROW(w.unlock(), std::logic_error);
  EXPECT_THROW((void)*w, std::logic_error);
  RwLockReadGuard<int> r = *l.try_read();
  r.unlock();
  EXPECT_THROW(r.unlock(), std::logic_error);
}

class RwLockAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(RwLockAnyFlavor);

// Writers keep the two halves equal; readers check that they never see them differ.
struct Pair {
  long a = 0, b = 0;
};

spool::Task<void> write_pairs(RwLock<Pair>* l, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    auto w = co_await l->write();
    ++w->a;
    co_await spool::yield_now();
    ++w->b;
  }
}

spool::Task<long> read_pairs(RwLock<Pair>* l, int rounds) {
  long torn = 0;
  for (int i = 0; i < rounds; ++i) {
    auto r = co_await l->read();
    const long a = r->a;
    co_await spool::yield_now();
    if (r->b != a) ++torn;
  }
  co_return torn;
}

TEST_P(RwLockAnyFlavor, ReadersNeverSeeAHalfWrite) {
  constexpr int kRounds = 300;
  auto rt = build();
  RwLock<Pair> l;
  std::vector<spool::JoinHandle<void>> writers;
  std::vector<spool::JoinHandle<long>> readers;
  for (int i = 0; i < 2; ++i) writers.push_back(rt.spawn(write_pairs(&l, kRounds)));
  for (int i = 0; i < 3; ++i) readers.push_back(rt.spawn(read_pairs(&l, kRounds)));
  for (auto& r : readers) EXPECT_EQ(wait(rt, std::move(r)), 0);
  for (auto& w : writers) wait(rt, std::move(w));
  Pair end = *spool::block_on(l.read());
  EXPECT_EQ(end.a, 2 * kRounds);
  EXPECT_EQ(end.b, 2 * kRounds);
}

}  // namespace
