// spool::oneshot: send then receive, receive then send from another thread, a dropped
// sender (RecvError) and a dropped receiver (send returns false).
#include <gtest/gtest.h>

#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "spool/spool.hpp"

namespace {

using spool::Task;

// Polls the receiver and counts down `first_pending` the first time it is pending, so the
// other side knows the receiver registered its waker.
template <class T>
struct SignalWhenPending {
  spool::oneshot::Receiver<T>* rx;
  std::latch* first_pending;
  bool signalled = false;
  spool::Poll<T> poll(spool::Context& cx) {
    spool::Poll<T> p = rx->poll(cx);
    if (p.is_pending() && !signalled) {
      signalled = true;
      first_pending->count_down();
    }
    return p;
  }
};

TEST(Oneshot, SendThenReceive) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  EXPECT_FALSE(tx.is_closed());
  EXPECT_TRUE(tx.send(5));
  EXPECT_EQ(spool::block_on(rx), 5);
}

TEST(Oneshot, ReceiveThenSendFromAnotherThread) {
  auto [tx, rx] = spool::oneshot::channel<std::string>();
  std::latch pending(1);
  std::thread sender([&pending, tx = std::move(tx)]() mutable {
    pending.wait();
    EXPECT_TRUE(tx.send("hello"));
  });
  EXPECT_EQ(spool::block_on(SignalWhenPending<std::string>{&rx, &pending}), "hello");
  sender.join();
}

TEST(Oneshot, CarriesAMoveOnlyValue) {
  auto [tx, rx] = spool::oneshot::channel<std::unique_ptr<int>>();
  EXPECT_TRUE(tx.send(std::make_unique<int>(8)));
  std::unique_ptr<int> v = spool::block_on(rx);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, 8);
}

TEST(Oneshot, SenderDroppedBeforeReceiveGivesRecvError) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  { auto gone = std::move(tx); }
  EXPECT_THROW(spool::block_on(rx), spool::oneshot::RecvError);
}

TEST(Oneshot, SenderDroppedOnAnotherThreadWakesThePendingReceiver) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  std::latch pending(1);
  std::thread dropper([&pending, tx = std::move(tx)]() mutable {
    pending.wait();
    auto gone = std::move(tx);
  });
  EXPECT_THROW(spool::block_on(SignalWhenPending<int>{&rx, &pending}), spool::oneshot::RecvError);
  dropper.join();
}

TEST(Oneshot, ReceiverDroppedMakesSendReturnFalse) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  { auto gone = std::move(rx); }
  EXPECT_TRUE(tx.is_closed());
  EXPECT_FALSE(tx.send(1));
}

TEST(Oneshot, SecondSendThrowsLogicError) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  EXPECT_TRUE(tx.send(1));
  EXPECT_THROW(tx.send(2), std::logic_error);
  EXPECT_EQ(spool::block_on(rx), 1);
}

TEST(Oneshot, PollingAfterTheValueWasTakenThrowsLogicError) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  EXPECT_TRUE(tx.send(1));
  EXPECT_EQ(spool::block_on(rx), 1);
  EXPECT_THROW(spool::block_on(rx), std::logic_error);
}

Task<void> send_later(spool::oneshot::Sender<int> tx, int v) {
  co_await spool::yield_now();
  tx.send(v);
}

Task<int> receive(spool::oneshot::Receiver<int> rx) { co_return co_await rx; }

TEST(Oneshot, BetweenTasksOnAMultiThreadRuntime) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto [tx, rx] = spool::oneshot::channel<int>();
  auto r = rt.spawn(receive(std::move(rx)));
  auto s = rt.spawn(send_later(std::move(tx), 64));
  EXPECT_EQ(spool::block_on(r), 64);
  spool::block_on(s);
}

TEST(Oneshot, BetweenTasksOnACurrentThreadRuntime) {
  auto rt = spool::Builder::current_thread().build();
  auto [tx, rx] = spool::oneshot::channel<int>();
  auto r = rt.spawn(receive(std::move(rx)));
  auto s = rt.spawn(send_later(std::move(tx), 65));
  EXPECT_EQ(rt.block_on(r), 65);
  rt.block_on(s);
}

TEST(Oneshot, SenderDroppedByACancelledTaskGivesRecvError) {
  auto rt = spool::Builder::current_thread().build();
  auto [tx, rx] = spool::oneshot::channel<int>();
  auto s = rt.spawn(send_later(std::move(tx), 1));
  s.abort();  // cancelled before its first poll: the sender dies with its frame
  auto r = rt.spawn(receive(std::move(rx)));
  try {
    rt.block_on(r);
    FAIL() << "expected JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_exception());
    EXPECT_THROW(std::rethrow_if_nested(e), spool::oneshot::RecvError);
  }
}

}  // namespace
