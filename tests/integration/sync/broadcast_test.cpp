// spool::broadcast: every receiver sees every message sent after it subscribed, in order;
// capacity and lag (the exact count missed), len, copies and resubscribe, closure from each
// side, cancellation of a waiting receive (nothing lost), the latest waker, misuse; stepped
// by hand, then under block_on with an outside thread and between tasks of both runtime
// flavours.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "spool/sync/broadcast.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::broadcast::RecvError;
using spool::broadcast::RecvResult;
using spool::broadcast::RecvStatus;
using spool_test::HandPoller;

// Everything `rx` can take now: the messages until the first non-message outcome.
std::vector<int> take_all(spool::broadcast::Receiver<int>& rx) {
  std::vector<int> got;
  for (RecvResult<int> r = rx.try_recv(); r; r = rx.try_recv()) got.push_back(*r);
  return got;
}

TEST(Broadcast, EveryReceiverSeesEveryMessageInOrder) {
  auto [tx, rx1] = spool::broadcast::channel<int>(4);
  auto rx2 = tx.subscribe();
  EXPECT_EQ(tx.receiver_count(), 2u);
  for (int i = 1; i <= 3; ++i) {
    auto sent = tx.send(i);
    EXPECT_TRUE(sent.is_sent());
    EXPECT_EQ(sent.receivers(), 2u);
  }
  EXPECT_EQ(take_all(rx1), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(take_all(rx2), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(rx1.try_recv().empty());  // nothing more now; the channel is open
}

TEST(Broadcast, ASubscriberSeesOnlyMessagesSentAfterIt) {
  auto [tx, rx] = spool::broadcast::channel<int>(4);
  (void)tx.send(1);
  auto late = tx.subscribe();
  (void)tx.send(2);
  auto later = rx.resubscribe();  // from a receiver: also starts at the next message
  (void)tx.send(3);
  EXPECT_EQ(take_all(rx), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(take_all(late), (std::vector<int>{2, 3}));
  EXPECT_EQ(take_all(later), (std::vector<int>{3}));
}

TEST(Broadcast, ACopiedReceiverHasTheSameMessagesLeft) {
  auto [tx, rx] = spool::broadcast::channel<int>(4);
  (void)tx.send(1);
  (void)tx.send(2);
  EXPECT_EQ(*rx.try_recv(), 1);
  auto copy = rx;
  EXPECT_EQ(tx.receiver_count(), 2u);
  (void)tx.send(3);
  EXPECT_EQ(take_all(copy), (std::vector<int>{2, 3}));
  EXPECT_EQ(take_all(rx), (std::vector<int>{2, 3}));
  EXPECT_EQ(tx.len(), 0u);  // the copy counted as a reader of 2: read by both, released
}

TEST(Broadcast, SendWithoutReceiversHandsTheValueBack) {
  auto [tx, rx] = spool::broadcast::channel<std::string>(2);
  { auto gone = std::move(rx); }
  EXPECT_EQ(tx.receiver_count(), 0u);
  auto refused = tx.send("hello");
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.receivers(), 0u);
  EXPECT_EQ(refused.value(), "hello");
  auto rx2 = tx.subscribe();  // a receiver again: sends go through, the refused one is gone
  auto sent = tx.send("again");
  ASSERT_TRUE(sent);
  EXPECT_EQ(sent.receivers(), 1u);
  EXPECT_THROW((void)sent.value(), std::logic_error);  // sent: nothing was handed back
  EXPECT_EQ(*rx2.try_recv(), "again");
  EXPECT_TRUE(rx2.try_recv().empty());
}

TEST(Broadcast, ALaggingReceiverIsToldExactlyHowManyItMissed) {
  auto [tx, rx] = spool::broadcast::channel<int>(3);
  auto fast = tx.subscribe();
  for (int i = 1; i <= 7; ++i) {
    (void)tx.send(i);
    EXPECT_EQ(*fast.try_recv(), i);
  }
  EXPECT_EQ(rx.len(), 7u);  // more than the capacity: the next receive lags
  RecvResult<int> r = rx.try_recv();
  EXPECT_TRUE(r.lagged());
  EXPECT_EQ(r.missed(), 4u);  // 1..4 were overwritten; 5, 6, 7 are held
  EXPECT_EQ(rx.len(), 3u);
  EXPECT_EQ(take_all(rx), (std::vector<int>{5, 6, 7}));
  EXPECT_TRUE(rx.try_recv().empty());
  try {
    (void)r.value();
    ADD_FAILURE() << "value() of a lagged result did not throw";
  } catch (const RecvError& e) {
    EXPECT_EQ(e.status(), RecvStatus::kLagged);
    EXPECT_EQ(e.missed(), 4u);
    EXPECT_NE(std::string(e.what()).find("missed 4 messages"), std::string::npos) << e.what();
  }
}

TEST(Broadcast, TheRingHoldsCapacityMessagesAndLenCountsTheUnread) {
  auto [tx, rx1] = spool::broadcast::channel<int>(2);
  auto rx2 = tx.subscribe();
  EXPECT_TRUE(tx.is_empty());
  (void)tx.send(1);
  EXPECT_EQ(tx.len(), 1u);
  EXPECT_EQ(*rx1.try_recv(), 1);
  EXPECT_EQ(tx.len(), 1u);  // rx2 has not read it yet
  EXPECT_EQ(*rx2.try_recv(), 1);
  EXPECT_EQ(tx.len(), 0u);
  for (int i = 2; i <= 4; ++i) (void)tx.send(i);
  EXPECT_EQ(tx.len(), 2u);  // at most the capacity: 2 was overwritten
  EXPECT_EQ(rx1.len(), 3u);
  EXPECT_EQ(rx1.try_recv().missed(), 1u);
  EXPECT_EQ(take_all(rx1), (std::vector<int>{3, 4}));
  EXPECT_TRUE(rx1.is_empty());
}

TEST(Broadcast, TheLastReaderTakesTheMessageAndADroppedReceiverReleasesItsUnread) {
  auto [tx, rx1] = spool::broadcast::channel<std::shared_ptr<int>>(4);
  auto rx2 = tx.subscribe();
  auto p = std::make_shared<int>(7);
  (void)tx.send(p);
  EXPECT_EQ(p.use_count(), 2);  // ours and the slot's
  {
    auto copy = rx1.try_recv();  // not the last reader: a copy
    EXPECT_EQ(p.use_count(), 3);
  }
  {
    auto moved = rx2.try_recv();  // the last reader: the slot's own, moved out
    EXPECT_EQ(p.use_count(), 2);
  }
  EXPECT_EQ(p.use_count(), 1);
  (void)tx.send(p);
  EXPECT_EQ(*rx1.try_recv().value(), 7);
  EXPECT_EQ(p.use_count(), 2);  // rx2 has not read it
  { auto gone = std::move(rx2); }
  EXPECT_EQ(p.use_count(), 1);  // nobody is left to read it: released
  EXPECT_EQ(tx.len(), 0u);
}

// A lagging receiver copied or dropped: the copy starts where the original stands (behind
// the oldest held message, so it lags by as much), and dropping either releases only the
// messages it still had to read.
TEST(Broadcast, ALaggingReceiverCopiedOrDroppedCountsItsSlotsExactly) {
  auto [tx, behind] = spool::broadcast::channel<std::shared_ptr<int>>(2);
  auto reader = tx.subscribe();
  std::vector<std::shared_ptr<int>> sent;
  for (int i = 1; i <= 5; ++i) {
    sent.push_back(std::make_shared<int>(i));
    (void)tx.send(sent.back());
  }
  // Held: 4 and 5, each by its slot; `reader` and `behind` have both still to read them.
  EXPECT_EQ(sent[3].use_count(), 2);
  EXPECT_EQ(sent[0].use_count(), 1);  // overwritten
  auto copy = behind;                 // lagged too: 3 missed
  RecvResult<std::shared_ptr<int>> r = copy.try_recv();
  EXPECT_TRUE(r.lagged());
  EXPECT_EQ(r.missed(), 3u);
  EXPECT_EQ(**copy.try_recv(), 4);  // not the last reader of 4: a copy
  EXPECT_EQ(sent[3].use_count(), 2);
  EXPECT_EQ(reader.try_recv().missed(), 3u);  // it never read: it lags as much
  EXPECT_EQ(**reader.try_recv(), 4);
  EXPECT_EQ(sent[3].use_count(), 2) << "4 was released while `behind` had still to read it";
  { auto gone = std::move(behind); }  // the last reader of 4 is gone: 4 is released
  EXPECT_EQ(sent[3].use_count(), 1);
  EXPECT_EQ(sent[4].use_count(), 2);  // 5: still needed by `reader` and `copy`
  EXPECT_EQ(**reader.try_recv(), 5);
  EXPECT_EQ(**copy.try_recv(), 5);
  EXPECT_EQ(sent[4].use_count(), 1);  // read by its last reader: moved out of the slot
  EXPECT_EQ(tx.len(), 0u);
}

TEST(Broadcast, CapacityMustBeBetweenOneAndTheMaximum) {
  try {
    (void)spool::broadcast::channel<int>(0);
    ADD_FAILURE() << "capacity 0 did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("spool::broadcast::channel(0)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)spool::broadcast::channel<int>(spool::broadcast::max_capacity + 1),
               std::invalid_argument);
}

TEST(Broadcast, WhenEverySenderIsGoneReceiversDrainThenGetClosed) {
  auto [tx, rx] = spool::broadcast::channel<int>(4);
  auto tx2 = tx;  // a copy is one more sender
  (void)tx.send(1);
  (void)tx2.send(2);
  { auto gone = std::move(tx); }
  EXPECT_FALSE(rx.is_closed());
  { auto gone = std::move(tx2); }
  EXPECT_TRUE(rx.is_closed());
  EXPECT_EQ(spool::block_on(rx.recv()).value(), 1);
  EXPECT_EQ(spool::block_on(rx.recv()).value(), 2);
  RecvResult<int> end = spool::block_on(rx.recv());
  EXPECT_TRUE(end.closed());
  EXPECT_TRUE(rx.try_recv().closed());  // the end stays the end
  EXPECT_TRUE(rx.resubscribe().try_recv().closed());
  EXPECT_THROW((void)end.value(), RecvError);
}

TEST(Broadcast, TheLastSenderGoingAwayWakesAWaitingReceiver) {
  auto [tx, rx] = spool::broadcast::channel<int>(4);
  HandPoller party;
  auto recv = rx.recv();
  EXPECT_TRUE(party.poll(recv).is_pending());
  { auto gone = std::move(tx); }
  EXPECT_EQ(party.wakes(), 1);
  auto r = party.poll(recv);
  ASSERT_TRUE(r.is_ready());
  EXPECT_TRUE(r.value().closed());
}

TEST(Broadcast, ASendWakesEveryWaitingReceiverWithTheLatestWaker) {
  auto [tx, rx1] = spool::broadcast::channel<int>(4);
  auto rx2 = tx.subscribe();
  HandPoller first, second, third;
  auto r1 = rx1.recv();
  auto r2 = rx2.recv();
  EXPECT_TRUE(first.poll(r1).is_pending());
  EXPECT_TRUE(second.poll(r1).is_pending());  // r1 now wakes `second`
  EXPECT_TRUE(third.poll(r2).is_pending());
  EXPECT_EQ(first.live_wakers(), 0);  // replaced, and dropped
  (void)tx.send(5);
  EXPECT_EQ(first.wakes(), 0);
  EXPECT_EQ(second.wakes(), 1);
  EXPECT_EQ(third.wakes(), 1);
  EXPECT_EQ(second.poll(r1).value().value(), 5);
  EXPECT_EQ(third.poll(r2).value().value(), 5);
  EXPECT_EQ(second.live_wakers(), 0);
  EXPECT_EQ(third.live_wakers(), 0);
}

TEST(Broadcast, ASendReachesMoreWaitersThanOneWakeBatch) {
  constexpr int kReceivers = 70;  // more than two WakeList batches
  auto [tx, rx] = spool::broadcast::channel<int>(1);
  HandPoller party;
  std::vector<spool::broadcast::Receiver<int>> rxs;
  for (int i = 0; i < kReceivers; ++i) rxs.push_back(tx.subscribe());
  std::vector<std::unique_ptr<spool::broadcast::Recv<int>>> recvs;
  for (auto& r : rxs) {
    recvs.push_back(std::make_unique<spool::broadcast::Recv<int>>(r.recv()));
    EXPECT_TRUE(party.poll(*recvs.back()).is_pending());
  }
  (void)tx.send(9);
  EXPECT_EQ(party.wakes(), kReceivers);
  for (auto& r : recvs) EXPECT_EQ(party.poll(*r).value().value(), 9);
}

TEST(Broadcast, AReceiveCancelledWhileWaitingLosesNothing) {
  auto [tx, rx] = spool::broadcast::channel<int>(4);
  HandPoller party;
  {
    auto recv = rx.recv();
    EXPECT_TRUE(party.poll(recv).is_pending());
  }  // cancelled while it waits: leaves the queue
  EXPECT_EQ(party.live_wakers(), 0);
  (void)tx.send(1);
  EXPECT_EQ(party.wakes(), 0);  // the dropped receive was not woken
  {
    auto recv = rx.recv();
    EXPECT_TRUE(party.poll(recv).is_ready());  // 1: taken by this poll
  }
  {
    auto recv = rx.recv();
    EXPECT_TRUE(party.poll(recv).is_pending());
    (void)tx.send(2);
    EXPECT_EQ(party.wakes(), 1);
  }  // cancelled after the send woke it, before it took 2
  EXPECT_EQ(party.live_wakers(), 0);
  EXPECT_EQ(*rx.try_recv(), 2);  // still there
}

// A receive that waits, whose Receiver is then moved away, leaves the channel's queue when
// it is destroyed (it must not reach the channel through the moved-from Receiver); the
// moved-to Receiver goes on from the same place.
TEST(Broadcast, AWaitingReceiveOutlivesTheMoveOfItsReceiver) {
  auto [tx, rx] = spool::broadcast::channel<int>(4);
  HandPoller party;
  std::optional<spool::broadcast::Receiver<int>> moved;
  {
    auto recv = rx.recv();
    EXPECT_TRUE(party.poll(recv).is_pending());
    moved.emplace(std::move(rx));
  }
  EXPECT_EQ(party.live_wakers(), 0);
  (void)tx.send(1);
  EXPECT_EQ(party.wakes(), 0);
  EXPECT_EQ(*moved->try_recv(), 1);
}

TEST(Broadcast, MisuseIsAClearError) {
  auto [tx, rx] = spool::broadcast::channel<int>(2);
  {
    HandPoller party;
    auto fresh = rx.recv();
    auto waiting = std::move(fresh);  // not polled yet: fine
    EXPECT_TRUE(party.poll(waiting).is_pending());
    try {
      auto moved = std::move(waiting);
      ADD_FAILURE() << "moving a waiting Recv did not throw";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("spool::broadcast::Recv moved while it waits"),
                std::string::npos)
          << e.what();
    }
  }  // (a Recv must not outlive its Receiver's place: it ends before rx moves)
  auto tx2 = std::move(tx);
  EXPECT_THROW((void)tx.send(1), std::logic_error);  // NOLINT(bugprone-use-after-move)
  auto rx2 = std::move(rx);
  try {
    (void)rx.try_recv();  // NOLINT(bugprone-use-after-move)
    ADD_FAILURE() << "a moved-from receiver did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("spool::broadcast::Receiver::try_recv on a moved-from"),
              std::string::npos)
        << e.what();
  }
}

// A type whose copy throws on demand: a receive whose copy fails leaves the message.
struct FragileCopy {
  static inline bool fail = false;
  int v = 0;
  explicit FragileCopy(int x) : v(x) {}
  FragileCopy(const FragileCopy& o) : v(o.v) {
    if (fail) throw std::runtime_error("copy failed");
  }
  FragileCopy(FragileCopy&&) noexcept = default;
};

TEST(Broadcast, AReceiveWhoseCopyThrowsLeavesTheMessage) {
  auto [tx, rx1] = spool::broadcast::channel<FragileCopy>(2);
  auto rx2 = tx.subscribe();
  (void)tx.send(FragileCopy(3));
  FragileCopy::fail = true;
  EXPECT_THROW((void)rx1.try_recv(), std::runtime_error);  // rx2 still has to read it: a copy
  FragileCopy::fail = false;
  EXPECT_EQ(rx1.try_recv()->v, 3);
  EXPECT_EQ(rx2.try_recv()->v, 3);
}

// --- under block_on, on runtimes and threads ---

TEST(Broadcast, BlockOnReceivesFromAnOutsideThread) {
  constexpr int kMessages = 1000;
  auto [tx, rx] = spool::broadcast::channel<int>(kMessages);  // room for all: no lag
  std::thread sender([tx = std::move(tx)] {
    for (int i = 1; i <= kMessages; ++i) EXPECT_TRUE(tx.send(i));
  });
  std::int64_t sum = 0;
  for (RecvResult<int> r = spool::block_on(rx.recv()); !r.closed();
       r = spool::block_on(rx.recv())) {
    sum += r.value();
  }
  sender.join();
  EXPECT_EQ(sum, std::int64_t{kMessages} * (kMessages + 1) / 2);
}

class BroadcastAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(BroadcastAnyFlavor);

// Receives until the end, adding up the messages (a lag would be a failure here).
spool::Task<std::int64_t> sum_all(spool::broadcast::Receiver<int> rx) {
  std::int64_t sum = 0;
  for (;;) {
    RecvResult<int> r = co_await rx.recv();
    if (r.closed()) break;
    sum += r.value();
  }
  co_return sum;
}

spool::Task<void> send_range(spool::broadcast::Sender<int> tx, int n) {
  for (int i = 1; i <= n; ++i) {
    EXPECT_TRUE(tx.send(i));
    if (i % 16 == 0) co_await spool::yield_now();
  }
}

TEST_P(BroadcastAnyFlavor, TasksReceiveEveryMessageFromATaskAndAThread) {
  constexpr int kMessages = 500;
  constexpr int kReceivers = 4;
  auto rt = build();
  // Room for everything both producers send: no receiver can lag.
  auto [tx, rx] = spool::broadcast::channel<int>(2 * kMessages);
  std::vector<spool::JoinHandle<std::int64_t>> sums;
  for (int i = 0; i < kReceivers; ++i) sums.push_back(rt.spawn(sum_all(tx.subscribe())));
  { auto unused = std::move(rx); }
  auto producer = rt.spawn(send_range(tx, kMessages));
  std::thread outside([tx = tx] {
    for (int i = 1; i <= kMessages; ++i) EXPECT_TRUE(tx.send(i));
  });
  { auto gone = std::move(tx); }
  outside.join();
  wait(rt, std::move(producer));
  for (auto& s : sums) EXPECT_EQ(wait(rt, std::move(s)), std::int64_t{kMessages} * (kMessages + 1));
}

}  // namespace
