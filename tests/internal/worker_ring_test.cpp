// A thread's own io_uring (src/driver/io/worker_ring.hpp): results reach the waiter, a
// waiter that gives up leaves the operation's memory to the ring until the kernel is done
// with it, the eventfd tells another thread that completions wait, and the destructor
// cancels and waits for what is still in flight.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "../support/counting_waker.hpp"
#include "driver/io/worker_ring.hpp"

#ifdef SPOOL_HAVE_LIBURING
#include <liburing.h>

namespace {

using spool::detail::RingOp;
using spool::detail::WorkerRing;

// A read into a buffer the operation owns; counts its destructions.
struct ReadOp final : RingOp {
  explicit ReadOp(int* destroyed) : destroyed(destroyed) {}
  ~ReadOp() override { ++*destroyed; }
  std::array<char, 64> buf{};
  int* destroyed;
};

class WorkerRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      ring_.emplace();
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "io_uring cannot run here: " << e.what();
    }
    ASSERT_EQ(::pipe(pipe_), 0);
    ring_->watch(true);  // reap_until waits on the eventfd
  }
  void TearDown() override {
    ring_.reset();  // before the pipe closes: its destructor cancels what still reads it
    for (const int fd : pipe_) {
      if (fd >= 0) ::close(fd);
    }
  }

  // Pushes a read of the pipe's read end into a new ReadOp and submits it.
  ReadOp* push_pipe_read() {
    auto* op = new ReadOp(&destroyed_);
    const bool pushed = ring_->push(op, [&](io_uring_sqe* sqe) {
      io_uring_prep_read(sqe, pipe_[0], op->buf.data(), op->buf.size(), 0);
    });
    EXPECT_TRUE(pushed);
    EXPECT_TRUE(ring_->submit());
    return op;
  }
  // Reaps until `n` completions were delivered; waits on the eventfd, not on time.
  void reap_until(std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      pollfd p{ring_->event_fd(), POLLIN, 0};
      ASSERT_EQ(::poll(&p, 1, -1), 1);
      ring_->drain_event();
      got += ring_->reap();
    }
  }

  std::optional<WorkerRing> ring_;
  int pipe_[2] = {-1, -1};
  int destroyed_ = 0;
};

TEST_F(WorkerRingTest, AResultReachesTheWaiterAndWakesIt) {
  spool_test::CountingWaker waker;
  const spool::Waker w = waker.waker();
  spool::Context cx(w);
  ReadOp* op = push_pipe_read();
  EXPECT_EQ(op->poll_result(cx), std::nullopt);
  EXPECT_EQ(ring_->in_flight(), 1u);
  ASSERT_EQ(::write(pipe_[1], "hello", 5), 5);
  reap_until(1);
  EXPECT_EQ(waker.counts().total_wakes(), 1);
  EXPECT_EQ(op->poll_result(cx), 5);
  EXPECT_EQ(std::string(op->buf.data(), 5), "hello");
  EXPECT_EQ(ring_->in_flight(), 0u);
  op->abandon();  // the waiter is done with it: freed now
  EXPECT_EQ(destroyed_, 1);
}

TEST_F(WorkerRingTest, AnAbandonedOperationIsFreedByItsCompletionNotBefore) {
  ReadOp* op = push_pipe_read();
  op->abandon();
  EXPECT_EQ(destroyed_, 0);  // the kernel still holds its buffer
  ASSERT_EQ(::write(pipe_[1], "late", 4), 4);
  reap_until(1);  // the kernel wrote into the op's own buffer; then the ring freed it
  EXPECT_EQ(destroyed_, 1);
}

TEST_F(WorkerRingTest, TheEventFdIsSignalledOnlyWhileWatched) {
  pollfd p{ring_->event_fd(), POLLIN, 0};
  ring_->watch(false);
  push_pipe_read()->abandon();
  ASSERT_EQ(::write(pipe_[1], "x", 1), 1);
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // the write completed the read: unsignalled
  (void)ring_->reap();
  ring_->watch(true);
  push_pipe_read()->abandon();
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // nothing completed yet
  ASSERT_EQ(::write(pipe_[1], "y", 1), 1);
  ASSERT_EQ(::poll(&p, 1, -1), 1);  // watched: signalled
  EXPECT_TRUE(ring_->may_have_completions());
  ring_->drain_event();
  EXPECT_EQ(ring_->reap(), 1u);
  EXPECT_FALSE(ring_->may_have_completions());
}

TEST_F(WorkerRingTest, DestroyingTheRingCancelsWhatIsInFlightAndFreesAbandonedOperations) {
  spool_test::CountingWaker waker;
  const spool::Waker w = waker.waker();
  spool::Context cx(w);
  ReadOp* kept = push_pipe_read();
  EXPECT_EQ(kept->poll_result(cx), std::nullopt);
  push_pipe_read()->abandon();
  ring_.reset();             // no writer ever writes: only a cancellation ends the two reads
  EXPECT_EQ(destroyed_, 1);  // the abandoned one
  EXPECT_EQ(waker.counts().total_wakes(), 1);
  EXPECT_EQ(kept->poll_result(cx), -ECANCELED);
  kept->abandon();
  EXPECT_EQ(destroyed_, 2);
}

TEST_F(WorkerRingTest, DestroyingTheRingSubmitsThenCancelsWhatWasOnlyQueued) {
  auto* op = new ReadOp(&destroyed_);
  ASSERT_TRUE(ring_->push(op, [&](io_uring_sqe* sqe) {
    io_uring_prep_read(sqe, pipe_[0], op->buf.data(), op->buf.size(), 0);
  }));
  op->abandon();  // never submitted: the destructor must still end it, not wait for ever
  ring_.reset();
  EXPECT_EQ(destroyed_, 1);
}

// A waiter on another thread polls each operation until it is complete and gives it up at
// once, racing the ring's thread, which is still inside the completion (its wake): the
// two references keep the operation alive until both are done (TSan, ASan).
TEST_F(WorkerRingTest, AWaiterGivingUpRacesTheCompletionSafely) {
  constexpr int kRounds = 200;
  constexpr int kOps = 64;
  std::mutex m;
  std::condition_variable cv;
  std::vector<RingOp*> handed;  // guarded by m
  bool done = false;            // guarded by m
  std::thread waiter([&] {
    spool_test::CountingWaker waker;
    const spool::Waker w = waker.waker();
    spool::Context cx(w);
    for (;;) {
      std::vector<RingOp*> mine;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return !handed.empty() || done; });
        if (handed.empty()) return;
        mine.swap(handed);
      }
      for (RingOp* op : mine) {
        while (!op->poll_result(cx)) {
        }
        op->abandon();
      }
    }
  });
  for (int round = 0; round < kRounds; ++round) {
    std::vector<RingOp*> ops;
    for (int i = 0; i < kOps; ++i) {
      auto* op = new ReadOp(&destroyed_);
      ASSERT_TRUE(ring_->push(op, [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); }));
      ops.push_back(op);
    }
    {
      std::lock_guard lock(m);
      handed.insert(handed.end(), ops.begin(), ops.end());
    }
    cv.notify_one();
    while (ring_->in_flight() > 0) (void)ring_->reap();
  }
  {
    std::lock_guard lock(m);
    done = true;
  }
  cv.notify_one();
  waiter.join();
  EXPECT_EQ(destroyed_, kRounds * kOps);
}

TEST_F(WorkerRingTest, AFullSubmissionQueueIsSubmittedToMakeRoom) {
  WorkerRing small(4);
  constexpr int kOps = 9;  // more than the queue holds, none submitted by the test
  for (int i = 0; i < kOps; ++i) {
    auto* op = new ReadOp(&destroyed_);
    ASSERT_TRUE(small.push(op, [](io_uring_sqe* sqe) { io_uring_prep_nop(sqe); }));
    op->abandon();
  }
  std::size_t got = 0;
  // Nops complete as they are submitted: each reap sees what the kernel has done.
  for (int reaps = 0; got < kOps && reaps < kOps; ++reaps) got += small.reap();
  EXPECT_EQ(got, std::size_t{kOps});
  EXPECT_EQ(destroyed_, kOps);
}

// Pushes (without submitting) a read of `fd` into a new ReadOp on `ring`.
ReadOp* push_read(WorkerRing& ring, int fd, int* destroyed) {
  auto* op = new ReadOp(destroyed);
  EXPECT_TRUE(ring.push_batched(op, [&](io_uring_sqe* sqe) {
    io_uring_prep_read(sqe, fd, op->buf.data(), op->buf.size(), 0);
  }));
  return op;
}

TEST_F(WorkerRingTest, ACancelledOperationEndsWithoutItsCompletionAndIsFreed) {
  ReadOp* op = push_pipe_read();
  op->cancel();  // no writer will ever write: only the cancel ends it
  EXPECT_EQ(destroyed_, 0);
  while (ring_->in_flight() > 0) (void)ring_->reap();
  EXPECT_EQ(destroyed_, 1);
}

TEST_F(WorkerRingTest, ACancelOfACompleteOperationFreesItAndSendsNothing) {
  ReadOp* op = push_pipe_read();
  ASSERT_EQ(::write(pipe_[1], "x", 1), 1);
  reap_until(1);
  op->cancel();
  EXPECT_EQ(destroyed_, 1);
  EXPECT_FALSE(ring_->has_unsubmitted());
}

TEST_F(WorkerRingTest, ACancelWaitsForRoomInAFullSubmissionQueueAndIsRetried) {
  WorkerRing small(2);
  ReadOp* first = push_read(small, pipe_[0], &destroyed_);
  ReadOp* second = push_read(small, pipe_[0], &destroyed_);  // the queue is full
  first->cancel();  // no entry for it now: queued, never dropped
  EXPECT_TRUE(small.has_unsubmitted());
  ASSERT_TRUE(small.submit());  // the reads, then the cancel in the room they made
  EXPECT_FALSE(small.has_unsubmitted());
  while (small.in_flight() > 1) (void)small.reap();
  EXPECT_EQ(destroyed_, 1);  // the cancelled read; the other still waits for data
  second->cancel();
  while (small.in_flight() > 0) (void)small.reap();
  EXPECT_EQ(destroyed_, 2);
}

TEST_F(WorkerRingTest, ACancelFromAnotherThreadGoesThroughTheInboxAndSignalsTheEventFd) {
  ring_->watch(false);  // only the request signals it
  ReadOp* op = push_pipe_read();
  std::thread other([op] { op->cancel(); });
  other.join();
  pollfd p{ring_->event_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, -1), 1);  // a sleeping owner would wake
  EXPECT_TRUE(ring_->has_unsubmitted());
  while (ring_->in_flight() > 0) (void)ring_->reap();
  EXPECT_EQ(destroyed_, 1);
  EXPECT_FALSE(ring_->has_unsubmitted());
}

TEST_F(WorkerRingTest, ACancelFromAnotherThreadStillWaitingWhenTheRingEndsIsReleased) {
  ReadOp* op = push_pipe_read();
  std::thread other([op] { op->cancel(); });
  other.join();
  ring_.reset();  // cancels everything itself; the request in the inbox only drops its reference
  EXPECT_EQ(destroyed_, 1);
}

TEST_F(WorkerRingTest, TakesSingleIssuerAndDeferredTaskRunWhereTheKernelHasThem) {
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  int major = 0;
  int minor = 0;
  ASSERT_EQ(std::sscanf(u.release, "%d.%d", &major, &minor), 2);
  if (major < 6 || (major == 6 && minor < 1)) GTEST_SKIP() << "Linux " << u.release;
  EXPECT_EQ(ring_->mode(), WorkerRing::Mode::kDeferTaskrun);
}

}  // namespace

#endif  // SPOOL_HAVE_LIBURING
