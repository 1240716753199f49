// spool::oneshot: send then receive, receive then send from another thread, a dropped
// sender (RecvError) and a dropped receiver (send returns false); the receiver's close and
// try_recv, the sender's closed(); between tasks of either runtime flavour
// (OneshotAnyFlavor.<test>/MultiThread and .../CurrentThread).
#include <gtest/gtest.h>

#include <latch>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "spool/spool.hpp"
#include "support/counting_waker.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Task;

using spool_rt_test::SignalWhenPending;

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
  EXPECT_EQ(
      spool::block_on(SignalWhenPending<spool::oneshot::Receiver<std::string>>{&rx, &pending}),
      "hello");
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
  EXPECT_THROW(spool::block_on(SignalWhenPending<spool::oneshot::Receiver<int>>{&rx, &pending}),
               spool::oneshot::RecvError);
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

TEST(Oneshot, TryRecvIsEmptyUntilTheValueIsSentThenTakesIt) {
  auto [tx, rx] = spool::oneshot::channel<std::string>();
  EXPECT_EQ(rx.try_recv(), std::nullopt);
  EXPECT_TRUE(tx.send("sent"));
  EXPECT_EQ(rx.try_recv(), "sent");
  EXPECT_THROW((void)rx.try_recv(), std::logic_error);
}

TEST(Oneshot, TryRecvAfterTheSenderWasDroppedThrowsRecvError) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  { auto gone = std::move(tx); }
  EXPECT_THROW((void)rx.try_recv(), spool::oneshot::RecvError);
}

TEST(Oneshot, ReceiverCloseRefusesALaterSendAndDropsItsValue) {
  auto [tx, rx] = spool::oneshot::channel<std::shared_ptr<int>>();
  rx.close();
  rx.close();  // idempotent
  EXPECT_TRUE(tx.is_closed());
  auto value = std::make_shared<int>(5);
  EXPECT_FALSE(tx.send(value));
  EXPECT_EQ(value.use_count(), 1);  // the refused copy was destroyed at once
  EXPECT_THROW((void)rx.try_recv(), spool::oneshot::RecvError);
  EXPECT_THROW(spool::block_on(rx), spool::oneshot::RecvError);
}

TEST(Oneshot, AValueSentBeforeTheCloseIsStillReceived) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  EXPECT_TRUE(tx.send(8));
  rx.close();
  EXPECT_EQ(spool::block_on(rx), 8);
}

TEST(Oneshot, MoveAssigningAReceiverClosesTheChannelItHeld) {
  auto [tx1, rx1] = spool::oneshot::channel<int>();
  auto [tx2, rx2] = spool::oneshot::channel<int>();
  rx1 = std::move(rx2);
  EXPECT_TRUE(tx1.is_closed());
  EXPECT_FALSE(tx2.is_closed());
  EXPECT_TRUE(tx2.send(3));
  EXPECT_EQ(spool::block_on(rx1), 3);
}

TEST(Oneshot, SenderClosedIsReadyOnceTheReceiverClosesOrAValueWasSent) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  auto closed = tx.closed();
  spool_test::CountingWaker counting;
  const spool::Waker waker = counting.waker();
  spool::Context cx(waker);
  EXPECT_TRUE(closed.poll(cx).is_pending());
  rx.close();
  EXPECT_EQ(counting.counts().total_wakes(), 1);  // the close woke the registered waker
  EXPECT_TRUE(closed.poll(cx).is_ready());

  auto [tx2, rx2] = spool::oneshot::channel<int>();
  auto closed2 = tx2.closed();
  EXPECT_TRUE(tx2.send(1));
  spool::block_on(closed2);  // nothing is left to wait for
  EXPECT_THROW((void)tx2.closed(), std::logic_error);
}

// closed() waiting in one task completes when the Sender, in another, sends.
TEST(Oneshot, SenderClosedWaitingIsWokenBySend) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  auto closed = tx.closed();
  spool_test::CountingWaker counting;
  const spool::Waker waker = counting.waker();
  spool::Context cx(waker);
  ASSERT_TRUE(closed.poll(cx).is_pending());
  EXPECT_TRUE(tx.send(1));
  EXPECT_EQ(counting.counts().total_wakes(), 1);
  EXPECT_TRUE(closed.poll(cx).is_ready());
  EXPECT_EQ(spool::block_on(rx), 1);
}

// A value whose move constructor throws: send throws, and the receiver learns that no value
// will come (woken, then RecvError) instead of waiting forever.
struct ThrowingMove {
  ThrowingMove() = default;
  ThrowingMove(ThrowingMove&&) { throw std::runtime_error("ThrowingMove: move failed"); }
};

TEST(Oneshot, ASendThatThrowsStillEndsTheChannel) {
  auto [tx, rx] = spool::oneshot::channel<ThrowingMove>();
  spool_test::CountingWaker counting;
  const spool::Waker waker = counting.waker();
  spool::Context cx(waker);
  ASSERT_TRUE(rx.poll(cx).is_pending());
  EXPECT_THROW(tx.send(ThrowingMove()), std::runtime_error);
  { auto gone = std::move(tx); }
  EXPECT_EQ(counting.counts().total_wakes(), 1);
  EXPECT_THROW((void)rx.try_recv(), spool::oneshot::RecvError);
}

TEST(Oneshot, RecvErrorSaysWhichSideEndedTheChannel) {
  auto [tx, rx] = spool::oneshot::channel<int>();
  rx.close();
  try {
    (void)rx.try_recv();
    FAIL() << "expected RecvError";
  } catch (const spool::oneshot::RecvError& e) {
    EXPECT_NE(std::string(e.what()).find("receiver closed"), std::string::npos) << e.what();
  }
}

// A task waits in closed() (its waker registered) when the receiver is dropped on another
// thread: the drop must wake it.
TEST(Oneshot, ReceiverDroppedOnAnotherThreadWakesSenderClosed) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto [tx, rx] = spool::oneshot::channel<int>();
  std::latch pending(1);
  struct Body {
    static Task<bool> run(spool::oneshot::Sender<int> tx, std::latch* pending) {
      auto closed = tx.closed();
      co_await SignalWhenPending<spool::oneshot::Closed<int>>{&closed, pending};
      co_return tx.is_closed();
    }
  };
  auto waiting = rt.spawn(Body::run(std::move(tx), &pending));
  std::thread receiver([&pending, rx = std::move(rx)]() mutable {
    pending.wait();
    auto gone = std::move(rx);
  });
  EXPECT_TRUE(rt.block_on(waiting));
  receiver.join();
}

Task<void> send_later(spool::oneshot::Sender<int> tx, int v) {
  co_await spool::yield_now();
  tx.send(v);
}

Task<int> receive(spool::oneshot::Receiver<int> rx) { co_return co_await rx; }

class OneshotAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(OneshotAnyFlavor);

TEST_P(OneshotAnyFlavor, BetweenTasks) {
  auto rt = build();
  auto [tx, rx] = spool::oneshot::channel<int>();
  auto r = rt.spawn(receive(std::move(rx)));
  auto s = rt.spawn(send_later(std::move(tx), 64));
  EXPECT_EQ(wait(rt, r), 64);
  wait(rt, s);
}

// The receiving task is pending (its waker registered) when the sender, on another thread,
// sends: the send must wake it.
TEST_P(OneshotAnyFlavor, SendFromAnotherThreadWakesAReceivingTask) {
  auto rt = build();
  auto [tx, rx] = spool::oneshot::channel<int>();
  std::latch pending(1);
  struct Body {
    static Task<int> run(spool::oneshot::Receiver<int> rx, std::latch* pending) {
      co_return co_await SignalWhenPending<spool::oneshot::Receiver<int>>{&rx, pending};
    }
  };
  auto r = rt.spawn(Body::run(std::move(rx), &pending));
  std::thread sender([&pending, tx = std::move(tx)]() mutable {
    pending.wait();
    EXPECT_TRUE(tx.send(66));
  });
  EXPECT_EQ(wait(rt, r), 66);
  sender.join();
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
