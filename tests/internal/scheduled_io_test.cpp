// ScheduledIo's waiters (src/driver/io/scheduled_io.hpp), stepped by hand: the owner of a
// direction's AtomicWaker and the queued waiters are all woken by one edge, a waiter that
// leaves is not, a close detaches every waiter, a shutdown wakes them all.
#include "driver/io/scheduled_io.hpp"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "support/counting_waker.hpp"

namespace {

using spool::detail::IoWaiter;
using spool::detail::ScheduledIo;
using spool_test::CountingWaker;

// One waiting future: its IoWaiter (reset: the future is dropped), polled with its own
// task's waker.
struct Party {
  CountingWaker task;
  std::optional<IoWaiter> waiter{std::in_place};

  // One poll of a wait for `mask`: true when ready.
  bool poll(ScheduledIo& io, std::uint32_t mask = ScheduledIo::kReadMask) {
    spool::Waker w = task.waker();
    spool::Context cx(w);
    return io.poll_ready(cx, mask, *waiter).is_ready();
  }
  int wakes() const { return task.counts().total_wakes(); }
  int live_wakers() const { return task.counts().live(); }
};

// Two readers and two writers waiting (the first of each direction owns it).
struct Crowd {
  std::array<Party, 4> parties;
  explicit Crowd(ScheduledIo& io) {
    EXPECT_FALSE(parties[0].poll(io, ScheduledIo::kReadMask));
    EXPECT_FALSE(parties[1].poll(io, ScheduledIo::kReadMask));
    EXPECT_FALSE(parties[2].poll(io, ScheduledIo::kWriteMask));
    EXPECT_FALSE(parties[3].poll(io, ScheduledIo::kWriteMask));
  }
};

class ScheduledIoTest : public ::testing::Test {
 protected:
  ScheduledIoTest() {
    // Used up, as after a first syscall's EAGAIN: every wait now waits for an edge.
    io_->clear_readiness({0, 0}, ScheduledIo::kReadable | ScheduledIo::kWritable);
  }

  std::unique_ptr<ScheduledIo> io_ = std::make_unique<ScheduledIo>(-1);
};

TEST_F(ScheduledIoTest, OneEdgeWakesTheOwnerAndEveryQueuedWaiter) {
  Party a, b, c;
  EXPECT_FALSE(a.poll(*io_));  // the owner of the read direction
  EXPECT_FALSE(b.poll(*io_));  // queued
  EXPECT_FALSE(c.poll(*io_));  // queued
  io_->set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(a.wakes(), 1);
  EXPECT_EQ(b.wakes(), 1);
  EXPECT_EQ(c.wakes(), 1);
  EXPECT_TRUE(a.poll(*io_));
  EXPECT_TRUE(b.poll(*io_));
  EXPECT_TRUE(c.poll(*io_));
}

TEST_F(ScheduledIoTest, AQueuedWaiterThatLostTheRaceWaitsForTheNextEdge) {
  Party a, b;
  EXPECT_FALSE(a.poll(*io_));
  EXPECT_FALSE(b.poll(*io_));
  io_->set_readiness(ScheduledIo::kReadable);
  ASSERT_EQ(b.wakes(), 1);
  // `a` took the data: its syscall's EAGAIN cleared the bit before `b` polled again.
  spool::Waker noop = spool::Waker::noop();
  spool::Context cx(noop);
  const spool::detail::ReadyEvent ev =
      io_->poll_ready(cx, ScheduledIo::kReadMask, *a.waiter).value();
  io_->clear_readiness(ev, ScheduledIo::kReadable);
  EXPECT_FALSE(b.poll(*io_));  // queued again, with its waker
  io_->set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(b.wakes(), 2);
  EXPECT_TRUE(b.poll(*io_));
}

TEST_F(ScheduledIoTest, AQueuedWaiterThatRepollsKeepsOnePlaceWithItsLatestWaker) {
  Party a, b;
  CountingWaker other;
  EXPECT_FALSE(a.poll(*io_));
  EXPECT_FALSE(b.poll(*io_));
  {
    spool::Waker w = other.waker();  // `b`'s future moved to another task
    spool::Context cx(w);
    EXPECT_TRUE(io_->poll_ready(cx, ScheduledIo::kReadMask, *b.waiter).is_pending());
  }
  EXPECT_EQ(b.live_wakers(), 0);  // the replaced waker was dropped
  io_->set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(b.wakes(), 0);
  EXPECT_EQ(other.counts().total_wakes(), 1);  // once: one place in the queue
}

// More queued waiters than one batch of wake-ups (WakeList: 32): the wake releases the lock
// to wake the first batch, and a waiter of that batch that meanwhile found the edge used up
// (its EAGAIN) and queued again waits for the next edge, woken once by each.
TEST_F(ScheduledIoTest, AWaiterThatQueuesAgainDuringAWakeWaitsForTheNextEdge) {
  // Woken: polls at once, as a worker would, finds nothing to read and waits again.
  struct RepollOnWake {
    ScheduledIo* io;
    IoWaiter* waiter;
    CountingWaker* next;  // the waker of its wait after the wake-up
    int wakes = 0;
    void wake() {
      ++wakes;
      spool::Waker w = next->waker();
      spool::Context cx(w);
      const auto ev = io->poll_ready(cx, ScheduledIo::kReadMask, *waiter);
      io->clear_readiness(ev.value(), ScheduledIo::kReadable);  // EAGAIN
      EXPECT_TRUE(io->poll_ready(cx, ScheduledIo::kReadMask, *waiter).is_pending());
    }
  };
  std::array<Party, 40> parties;  // [0] owns the direction, the others queue
  EXPECT_FALSE(parties[0].poll(*io_));
  IoWaiter repoller;
  CountingWaker after;
  auto target = std::make_shared<RepollOnWake>(RepollOnWake{io_.get(), &repoller, &after});
  {
    spool::Waker w = spool::Waker::from(target);
    spool::Context cx(w);
    EXPECT_TRUE(io_->poll_ready(cx, ScheduledIo::kReadMask, repoller).is_pending());  // 1st queued
  }
  for (std::size_t i = 1; i < parties.size(); ++i) EXPECT_FALSE(parties[i].poll(*io_));
  io_->set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(target->wakes, 1);
  EXPECT_EQ(after.counts().total_wakes(), 0);  // queued again: not this edge's
  for (Party& p : parties) EXPECT_EQ(p.wakes(), 1);
  io_->set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(after.counts().total_wakes(), 1);
}

TEST_F(ScheduledIoTest, EachDirectionWakesOnlyItsOwnWaiters) {
  Crowd c(*io_);
  auto& [reader, reader2, writer, writer2] = c.parties;
  io_->set_readiness(ScheduledIo::kWritable);
  EXPECT_EQ(reader.wakes() + reader2.wakes(), 0);
  EXPECT_EQ(writer.wakes(), 1);
  EXPECT_EQ(writer2.wakes(), 1);
  io_->set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(reader.wakes(), 1);
  EXPECT_EQ(reader2.wakes(), 1);
}

TEST_F(ScheduledIoTest, AWaiterThatIsDroppedIsNotWokenAndLetsGoOfItsWaker) {
  Party a, b, c;
  EXPECT_FALSE(a.poll(*io_));
  EXPECT_FALSE(b.poll(*io_));
  b.waiter.reset();  // the queued future is dropped
  EXPECT_EQ(b.live_wakers(), 0);
  a.waiter.reset();  // and so is the owner
  EXPECT_EQ(a.live_wakers(), 0);
  EXPECT_FALSE(c.poll(*io_));
  io_->set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(a.wakes(), 0);
  EXPECT_EQ(b.wakes(), 0);
  EXPECT_EQ(c.wakes(), 1);
}

TEST_F(ScheduledIoTest, AMovedWaiterStartsAfreshAndTheMovedFromOneKeepsItsPlace) {
  Party a, b;
  EXPECT_FALSE(a.poll(*io_));
  IoWaiter moved(std::move(*a.waiter));
  spool::Waker w = b.task.waker();
  spool::Context cx(w);
  EXPECT_TRUE(io_->poll_ready(cx, ScheduledIo::kReadMask, moved).is_pending());  // queued
  io_->set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(a.wakes(), 1);  // the moved-from place
  EXPECT_EQ(b.wakes(), 1);  // the moved one's
}

// A future assigned over a waiting one may wait on another socket: the waiter assigned to
// gives up its place on the first.
TEST_F(ScheduledIoTest, AWaiterAssignedToGivesUpItsPlace) {
  Party a, b;
  ScheduledIo other(-1);
  other.clear_readiness({0, 0}, ScheduledIo::kReadable | ScheduledIo::kWritable);
  EXPECT_FALSE(a.poll(*io_));  // owns io_'s read direction
  *a.waiter = IoWaiter();
  EXPECT_EQ(a.live_wakers(), 0);
  EXPECT_FALSE(a.poll(other));  // owns other's
  EXPECT_FALSE(b.poll(*io_));   // owns io_'s, which a gave up
  other.set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(a.wakes(), 1);
  io_->set_readiness(ScheduledIo::kReadable);
  EXPECT_EQ(b.wakes(), 1);
  EXPECT_EQ(a.wakes(), 1);
  a.waiter.reset();  // before `other` goes
}

TEST_F(ScheduledIoTest, ACloseDetachesEveryWaiterAndHandsItsWakerToTheCloser) {
  Party reader, woken_reader, writer, queued_writer;
  EXPECT_FALSE(reader.poll(*io_));        // owner
  EXPECT_FALSE(woken_reader.poll(*io_));  // queued, then woken below, not polled since
  EXPECT_FALSE(writer.poll(*io_, ScheduledIo::kWriteMask));         // owner
  EXPECT_FALSE(queued_writer.poll(*io_, ScheduledIo::kWriteMask));  // queued
  io_->set_readiness(ScheduledIo::kReadClosed);
  EXPECT_EQ(woken_reader.wakes(), 1);
  EXPECT_EQ(queued_writer.wakes(), 0);
  std::vector<spool::Waker> woken;
  io_->detach_waiters(&woken);
  // Every waiter that still held a waker hands it over (woken_reader's was taken already),
  // for the closer to wake once its source is cleared (IoSource::close).
  EXPECT_EQ(woken.size(), 3u);
  for (spool::Waker& w : woken) std::move(w).wake();
  for (Party* p : {&reader, &woken_reader, &writer, &queued_writer}) EXPECT_EQ(p->wakes(), 1);
  io_.reset();  // freed: the waiters' destructors must not touch it (ASan)
  EXPECT_EQ(writer.live_wakers(), 0);
  EXPECT_EQ(queued_writer.live_wakers(), 0);
  for (Party* p : {&reader, &woken_reader, &writer, &queued_writer}) p->waiter.reset();
}

TEST_F(ScheduledIoTest, AShutdownWakesEveryWaiterOfBothDirections) {
  Crowd c(*io_);
  auto& [reader, reader2, writer, writer2] = c.parties;
  std::vector<spool::Waker> wakers;
  io_->shut_down(wakers);
  EXPECT_EQ(wakers.size(), 4u);
  for (spool::Waker& w : wakers) std::move(w).wake();
  for (Party* p : {&reader, &reader2}) {
    EXPECT_EQ(p->wakes(), 1);
    EXPECT_TRUE(p->poll(*io_, ScheduledIo::kReadMask));
  }
  for (Party* p : {&writer, &writer2}) {
    EXPECT_EQ(p->wakes(), 1);
    EXPECT_TRUE(p->poll(*io_, ScheduledIo::kWriteMask));
  }
  io_->detach_waiters(nullptr);  // the sockets close after the shutdown (a destructor's close)
  io_.reset();                   // freed before the waiters (ASan: they must not touch it)
}

}  // namespace
