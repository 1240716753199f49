// A pipe end closed, or an AsyncFd released, while another party's operation on it waits for
// readiness: that party is woken, and its next poll throws the closed-descriptor
// std::logic_error. (The close used to drop its waker unwoken: the task waited forever.)
// Each waiting operation is polled by hand with a counting waker, inside block_on.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"

namespace {

using spool::Task;
using spool_test::HandPoller;

TEST(CloseWhileWaiting, ClosingAPipeReaderWakesItsWaitingRead) {
  spool::block_on([]() -> Task<void> {
    auto [r, w] = spool::pipe();
    HandPoller party;
    std::byte buf[16];
    auto read = r.read(std::span(buf));
    EXPECT_TRUE(party.poll(read).is_pending());  // nothing written
    r.close();
    EXPECT_EQ(party.wakes(), 1);
    EXPECT_THROW((void)party.poll(read), std::logic_error);
    co_return;
  }());
}

TEST(CloseWhileWaiting, ClosingAPipeWriterWakesItsWaitingWrite) {
  spool::block_on([]() -> Task<void> {
    auto [r, w] = spool::pipe();
    HandPoller party;
    const std::vector<std::byte> big(1 << 20);  // more than the pipe holds: the write waits
    auto write = w.write_all(std::span(big));
    EXPECT_TRUE(party.poll(write).is_pending());
    w.close();
    EXPECT_EQ(party.wakes(), 1);
    EXPECT_THROW((void)party.poll(write), std::logic_error);
    co_return;
  }());
}

TEST(CloseWhileWaiting, ReleasingAnAsyncFdWakesItsWaitingReadiness) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
  spool::block_on([](int rfd) -> Task<void> {
    spool::AsyncFd fd(rfd);
    {
      // A new AsyncFd counts as ready until a call meets EAGAIN: clear that first.
      auto guard = co_await fd.readable();
      guard.clear_ready();
    }
    HandPoller first;
    HandPoller second;  // any number of tasks may wait on one AsyncFd
    auto readable = fd.readable();
    auto also_readable = fd.readable();
    EXPECT_TRUE(first.poll(readable).is_pending());
    EXPECT_TRUE(second.poll(also_readable).is_pending());
    EXPECT_EQ(fd.release(), rfd);
    EXPECT_EQ(first.wakes(), 1);
    EXPECT_EQ(second.wakes(), 1);
    EXPECT_THROW((void)first.poll(readable), std::logic_error);
    EXPECT_THROW((void)second.poll(also_readable), std::logic_error);
    co_return;
  }(fds[0]));
  ::close(fds[0]);
  ::close(fds[1]);
}

// Polls `inner`, and tells `parked` once a poll of it was pending: the operation then waits,
// and its task parks when this poll returns (it reads the source no more).
template <class F>
struct TellWhenPending {
  F inner;
  spool::Notify* parked;
  bool told = false;
  auto poll(spool::Context& cx) {
    auto p = inner.poll(cx);
    if (p.is_pending() && !std::exchange(told, true)) parked->notify_one();
    return p;
  }
};

// The same with tasks on two workers: one waits on the pipe, the other closes it.
TEST(CloseWhileWaiting, AReadWaitingOnAnotherWorkerFailsWhenTheReaderCloses) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  const bool failed = rt.block_on([]() -> Task<bool> {
    auto [r, w] = spool::pipe();
    auto reader = std::make_shared<spool::PipeReader>(std::move(r));
    spool::Notify parked;
    auto waiting =
        spool::spawn([](std::shared_ptr<spool::PipeReader> r, spool::Notify* parked) -> Task<bool> {
          std::byte buf[16];
          try {
            (void)co_await TellWhenPending<decltype(r->read(std::span(buf)))>{
                r->read(std::span(buf)), parked};
          } catch (const std::logic_error&) {
            co_return true;
          }
          co_return false;
        }(reader, &parked));
    co_await parked.notified();
    reader->close();
    co_return co_await std::move(waiting);
  }());
  EXPECT_TRUE(failed);
}

}  // namespace
