// Stress (run under TSan): one RwLock shared by reader and writer tasks on a multi-thread
// runtime and by outside threads, some of whose write futures are cancelled while they wait
// (holding the read permits they had collected). The invariants: a reader never sees a
// half-done write, the write count is exact, and the lock is wholly free at the end.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "spool/spool.hpp"

namespace rwlock_stress_test {
namespace {

using spool::RwLock;

// Writers keep `a == b`; plain fields, so TSan reports any access the lock failed to order.
struct Pair {
  std::int64_t a = 0, b = 0;
};

constexpr std::int64_t kRounds = 143'000;
// 2 writer tasks, 4 reader tasks and an outside reader: 7 x 143,000 = 1,001,000 locks taken,
// each counted; plus 143,000 write futures polled once by the canceller (taken or cancelled).

struct Reads {
  std::int64_t done = 0;
  std::int64_t torn = 0;
};

spool::Task<void> writer(RwLock<Pair>* l, std::int64_t rounds) {
  for (std::int64_t i = 0; i < rounds; ++i) {
    auto w = co_await l->write();
    ++w->a;
    ++w->b;
  }
}

spool::Task<Reads> reader(RwLock<Pair>* l, std::int64_t rounds) {
  Reads reads;
  for (std::int64_t i = 0; i < rounds; ++i) {
    auto r = co_await l->read();
    if (r->a != r->b) ++reads.torn;
    ++reads.done;
  }
  co_return reads;
}

TEST(RwLockStress, ReadersWritersAndCancelledWriters) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  RwLock<Pair> l;
  std::vector<spool::JoinHandle<void>> writers;
  std::vector<spool::JoinHandle<Reads>> readers;
  for (int i = 0; i < 2; ++i) writers.push_back(rt.spawn(writer(&l, kRounds)));
  for (int i = 0; i < 4; ++i) readers.push_back(rt.spawn(reader(&l, kRounds)));
  Reads outside;  // the outside reader's own, read after its join
  std::thread outside_reader([&] {
    for (std::int64_t i = 0; i < kRounds; ++i) {
      auto r = spool::block_on(l.read());
      if (r->a != r->b) ++outside.torn;
      ++outside.done;
    }
  });
  // Polls a write future once and drops it: written at once, or cancelled while waiting.
  std::int64_t cancel_side_writes = 0;
  std::thread canceller([&] {
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    for (std::int64_t i = 0; i < kRounds; ++i) {
      auto write = l.write();
      auto p = write.poll(cx);
      if (p.is_ready()) {
        ++p.value()->a;
        ++p.value()->b;
        ++cancel_side_writes;
      }
    }
  });
  Reads total;
  for (auto& r : readers) {
    const Reads got = spool::block_on(std::move(r));
    total.done += got.done;
    total.torn += got.torn;
  }
  for (auto& w : writers) spool::block_on(std::move(w));
  outside_reader.join();
  canceller.join();
  total.done += outside.done;
  total.torn += outside.torn;
  EXPECT_EQ(total.done, 5 * kRounds);
  EXPECT_EQ(total.torn, 0);
  auto end = l.try_write();
  ASSERT_TRUE(end.has_value()) << "read permits were lost";
  EXPECT_EQ((*end)->a, 2 * kRounds + cancel_side_writes);
  EXPECT_EQ((*end)->b, (*end)->a);
}

}  // namespace
}  // namespace rwlock_stress_test
