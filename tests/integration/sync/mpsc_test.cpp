// spool::mpsc: bounded and unbounded channels — order, capacity and back-pressure, closure
// from each side, cancellation of a waiting send or receive (nothing lost), reserve,
// recv_many, try_recv, a value whose constructor throws, misuse; stepped by hand, then
// between tasks of both runtime flavours and outside threads.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "spool/sync/mpsc.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;
using spool::mpsc::TrySendResult;
using spool_test::HandPoller;

// Receives everything until the end, under block_on.
template <class T>
std::vector<T> drain(spool::mpsc::Receiver<T>& rx) {
  std::vector<T> got;
  while (std::optional<T> v = spool::block_on(rx.recv())) got.push_back(std::move(*v));
  return got;
}

TEST(Mpsc, BoundedDeliversInOrderThenEndsWhenEverySenderIsGone) {
  auto [tx, rx] = spool::mpsc::channel<int>(4);
  auto tx2 = tx;  // a copy is one more sender
  EXPECT_TRUE(spool::block_on(tx.send(1)));
  EXPECT_TRUE(spool::block_on(tx2.send(2)));
  EXPECT_TRUE(spool::block_on(tx.send(3)));
  { auto gone = std::move(tx); }
  EXPECT_FALSE(rx.is_closed());  // tx2 is still there
  { auto gone = std::move(tx2); }
  EXPECT_TRUE(rx.is_closed());
  EXPECT_EQ(drain(rx), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(spool::block_on(rx.recv()), std::nullopt);  // the end stays the end
}

TEST(Mpsc, TrySendFillsTheCapacityAndEachReceiveFreesOneSlot) {
  auto [tx, rx] = spool::mpsc::channel<int>(2);
  int a = 1, b = 2, c = 3;
  EXPECT_EQ(tx.try_send(std::move(a)), TrySendResult::kSent);
  EXPECT_EQ(tx.try_send(std::move(b)), TrySendResult::kSent);
  EXPECT_EQ(tx.capacity(), 0u);
  EXPECT_EQ(tx.try_send(std::move(c)), TrySendResult::kFull);
  EXPECT_EQ(rx.try_recv(), 1);
  EXPECT_EQ(tx.capacity(), 1u);
  EXPECT_EQ(tx.try_send(std::move(c)), TrySendResult::kSent);
  EXPECT_EQ(rx.try_recv(), 2);
  EXPECT_EQ(rx.try_recv(), 3);
  EXPECT_EQ(rx.try_recv(), std::nullopt);
  EXPECT_FALSE(rx.is_closed());
}

TEST(Mpsc, TrySendLeavesTheValueWithTheCallerWhenItFails) {
  auto [tx, rx] = spool::mpsc::channel<std::string>(1);
  std::string first = "first", second = "second";
  EXPECT_EQ(tx.try_send(std::move(first)), TrySendResult::kSent);
  EXPECT_EQ(tx.try_send(std::move(second)), TrySendResult::kFull);
  EXPECT_EQ(second, "second");
  rx.close();
  EXPECT_EQ(tx.try_send(std::move(second)), TrySendResult::kClosed);
  EXPECT_EQ(second, "second");
}

TEST(Mpsc, ASendWaitsWhileFullAndIsWokenByAReceive) {
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  EXPECT_TRUE(spool::block_on(tx.send(1)));
  HandPoller sender;
  auto send = tx.send(2);
  EXPECT_TRUE(sender.poll(send).is_pending());
  EXPECT_EQ(rx.try_recv(), 1);
  EXPECT_EQ(sender.wakes(), 1);
  spool::Poll<bool> sent = sender.poll(send);
  ASSERT_TRUE(sent.is_ready());
  EXPECT_TRUE(sent.value());
  EXPECT_EQ(rx.try_recv(), 2);
}

TEST(Mpsc, SendersWaitingForRoomAreServedInOrder) {
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  EXPECT_TRUE(spool::block_on(tx.send(0)));
  HandPoller p1, p2, p3;
  auto s1 = tx.send(1);
  auto s2 = tx.send(2);
  auto s3 = tx.send(3);
  EXPECT_TRUE(p1.poll(s1).is_pending());
  EXPECT_TRUE(p2.poll(s2).is_pending());
  EXPECT_TRUE(p3.poll(s3).is_pending());
  std::vector<int> got;
  for (int round = 0; round < 3; ++round) {
    got.push_back(*rx.try_recv());
    HandPoller* next[] = {&p1, &p2, &p3};
    EXPECT_EQ(next[round]->wakes(), 1) << "round " << round;
    auto* fut = round == 0 ? &s1 : round == 1 ? &s2 : &s3;
    EXPECT_TRUE(next[round]->poll(*fut).is_ready());
  }
  got.push_back(*rx.try_recv());
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Mpsc, AReceiverWaitingIsWokenBySendAndByTheLastSendersDrop) {
  auto [tx, rx] = spool::mpsc::channel<int>(2);
  HandPoller receiver;
  auto recv = rx.recv();
  EXPECT_TRUE(receiver.poll(recv).is_pending());
  EXPECT_TRUE(spool::block_on(tx.send(7)));
  EXPECT_EQ(receiver.wakes(), 1);
  EXPECT_EQ(receiver.poll(recv).value(), 7);

  auto recv2 = rx.recv();
  EXPECT_TRUE(receiver.poll(recv2).is_pending());
  { auto gone = std::move(tx); }
  EXPECT_EQ(receiver.wakes(), 2);
  EXPECT_EQ(receiver.poll(recv2).value(), std::nullopt);
}

TEST(Mpsc, DroppingTheReceiverRefusesSendsAndWakesSendersWaitingForRoom) {
  auto [tx, rx] = spool::mpsc::channel<std::shared_ptr<int>>(1);
  auto queued = std::make_shared<int>(1);
  EXPECT_TRUE(spool::block_on(tx.send(queued)));
  HandPoller sender;
  auto waiting = tx.send(std::make_shared<int>(2));
  EXPECT_TRUE(sender.poll(waiting).is_pending());
  { auto gone = std::move(rx); }
  EXPECT_EQ(queued.use_count(), 1);  // the queued value was destroyed with the receiver
  EXPECT_EQ(sender.wakes(), 1);
  EXPECT_FALSE(sender.poll(waiting).value());
  EXPECT_TRUE(tx.is_closed());
  EXPECT_FALSE(spool::block_on(tx.send(std::make_shared<int>(3))));
}

TEST(Mpsc, CloseKeepsWhatIsQueuedAndRefusesTheRest) {
  auto [tx, rx] = spool::mpsc::channel<int>(4);
  EXPECT_TRUE(spool::block_on(tx.send(1)));
  EXPECT_TRUE(spool::block_on(tx.send(2)));
  rx.close();
  EXPECT_TRUE(tx.is_closed());
  EXPECT_TRUE(rx.is_closed());
  EXPECT_FALSE(spool::block_on(tx.send(3)));
  EXPECT_EQ(drain(rx), (std::vector<int>{1, 2}));
}

TEST(Mpsc, ACancelledSendQueuesNothingAndLosesNoRoom) {
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  EXPECT_TRUE(spool::block_on(tx.send(1)));
  HandPoller first, second;
  {
    auto cancelled = tx.send(2);
    EXPECT_TRUE(first.poll(cancelled).is_pending());
    auto behind = tx.send(3);
    EXPECT_TRUE(second.poll(behind).is_pending());
    EXPECT_EQ(rx.try_recv(), 1);  // the room goes to `cancelled`, the head of the queue
    EXPECT_EQ(first.wakes(), 1);
  }  // both destroyed: the room handed to `cancelled` goes back
  EXPECT_EQ(tx.capacity(), 1u);
  EXPECT_EQ(rx.try_recv(), std::nullopt);  // nothing was queued by the cancelled sends
  EXPECT_TRUE(spool::block_on(tx.send(4)));
  EXPECT_EQ(rx.try_recv(), 4);
}

TEST(Mpsc, ACancelledReceiveLosesNoValue) {
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  HandPoller receiver;
  {
    auto cancelled = rx.recv();
    EXPECT_TRUE(receiver.poll(cancelled).is_pending());
  }
  EXPECT_TRUE(spool::block_on(tx.send(5)));
  EXPECT_EQ(spool::block_on(rx.recv()), 5);
}

TEST(Mpsc, AReservedPermitSendsWithoutWaitingOrGivesTheRoomBack) {
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  {
    std::optional<spool::mpsc::Permit<int>> permit = spool::block_on(tx.reserve());
    ASSERT_TRUE(permit.has_value());
    EXPECT_EQ(tx.capacity(), 0u);
  }  // dropped unused
  EXPECT_EQ(tx.capacity(), 1u);
  std::optional<spool::mpsc::Permit<int>> permit = spool::block_on(tx.reserve());
  permit->send(9);
  EXPECT_THROW(permit->send(10), std::logic_error);
  EXPECT_EQ(rx.try_recv(), 9);
  rx.close();
  EXPECT_EQ(spool::block_on(tx.reserve()), std::nullopt);
}

TEST(Mpsc, RecvManyTakesUpToTheLimitAndZeroAtTheEnd) {
  auto [tx, rx] = spool::mpsc::unbounded_channel<int>();
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(tx.send(i));
  std::vector<int> out;
  EXPECT_EQ(spool::block_on(rx.recv_many(out, 3)), 3u);
  EXPECT_EQ(spool::block_on(rx.recv_many(out, 0)), 0u);
  EXPECT_EQ(spool::block_on(rx.recv_many(out, 10)), 2u);
  EXPECT_EQ(out, (std::vector<int>{0, 1, 2, 3, 4}));
  { auto gone = std::move(tx); }
  EXPECT_EQ(spool::block_on(rx.recv_many(out, 10)), 0u);
}

TEST(Mpsc, UnboundedSendsNeverWaitAndEndLikeBounded) {
  auto [tx, rx] = spool::mpsc::unbounded_channel<std::uint64_t>();
  constexpr std::uint64_t kCount = 10'000;
  for (std::uint64_t i = 0; i < kCount; ++i) EXPECT_TRUE(tx.send(i));
  { auto gone = std::move(tx); }
  std::uint64_t n = 0, sum = 0;
  while (auto v = spool::block_on(rx.recv())) {
    EXPECT_EQ(*v, n);
    ++n;
    sum += *v;
  }
  EXPECT_EQ(n, kCount);
  EXPECT_EQ(sum, kCount * (kCount - 1) / 2);
}

TEST(Mpsc, UnboundedSendAfterTheReceiverWentAwayReturnsFalse) {
  auto [tx, rx] = spool::mpsc::unbounded_channel<std::shared_ptr<int>>();
  { auto gone = std::move(rx); }
  auto value = std::make_shared<int>(1);
  EXPECT_FALSE(tx.send(value));
  EXPECT_EQ(value.use_count(), 1);
  EXPECT_TRUE(tx.is_closed());
}

// A value whose move constructor throws when told to: the throwing push leaves nothing in
// the channel, and its slot's room comes back once the receiver has passed it.
struct Fragile {
  static inline bool fail_next_move = false;
  int v;
  explicit Fragile(int x) : v(x) {}
  Fragile(Fragile&& o) : v(o.v) {
    if (fail_next_move) {
      fail_next_move = false;
      throw std::runtime_error("Fragile: move failed");
    }
  }
};

TEST(Mpsc, AValueWhoseConstructorThrowsLeavesNoTraceAndNoLostRoom) {
  auto [tx, rx] = spool::mpsc::channel<Fragile>(3);
  EXPECT_TRUE(spool::block_on(tx.send(Fragile(1))));
  std::optional<spool::mpsc::Permit<Fragile>> permit = spool::block_on(tx.reserve());
  Fragile::fail_next_move = true;
  EXPECT_THROW(permit->send(Fragile(2)), std::runtime_error);
  EXPECT_TRUE(spool::block_on(tx.send(Fragile(3))));
  std::optional<Fragile> a = rx.try_recv();
  std::optional<Fragile> b = rx.try_recv();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->v, 1);
  EXPECT_EQ(b->v, 3);
  EXPECT_EQ(tx.capacity(), 3u);
}

// The hole a throwing push leaves holds its slot's room until the receiver passes it: the
// push must wake a parked receiver, or the receiver and every sender wait forever.
TEST(Mpsc, AThrowingPushWakesTheParkedReceiverSoTheRoomComesBack) {
  auto [tx, rx] = spool::mpsc::channel<Fragile>(1);
  HandPoller receiver;
  auto recv = rx.recv();
  ASSERT_TRUE(receiver.poll(recv).is_pending());
  Fragile::fail_next_move = true;
  Fragile f(1);
  EXPECT_THROW((void)tx.try_send(std::move(f)), std::runtime_error);
  EXPECT_EQ(receiver.wakes(), 1);
  HandPoller sender;
  auto send = tx.send(Fragile(2));
  EXPECT_TRUE(sender.poll(send).is_pending());    // the hole holds the only slot
  EXPECT_TRUE(receiver.poll(recv).is_pending());  // passes the hole: the room goes home
  EXPECT_EQ(sender.wakes(), 1);
  EXPECT_TRUE(sender.poll(send).value());
  EXPECT_EQ(receiver.wakes(), 2);
  EXPECT_EQ(receiver.poll(recv).value()->v, 2);
}

// After close, the end comes only once no sender holds room it may still fill: a Permit
// reserved before the close delivers its value, and the end follows it.
TEST(Mpsc, AfterCloseTheEndWaitsForRoomHeldBySenders) {
  auto [tx, rx] = spool::mpsc::channel<int>(2);
  std::optional<spool::mpsc::Permit<int>> permit = spool::block_on(tx.reserve());
  ASSERT_TRUE(permit.has_value());
  rx.close();
  EXPECT_FALSE(rx.is_closed());  // the permit may still send
  HandPoller receiver;
  auto recv = rx.recv();
  EXPECT_TRUE(receiver.poll(recv).is_pending());
  permit->send(7);
  EXPECT_EQ(receiver.wakes(), 1);
  EXPECT_EQ(receiver.poll(recv).value(), 7);
  permit.reset();
  EXPECT_TRUE(rx.is_closed());
  EXPECT_EQ(spool::block_on(rx.recv()), std::nullopt);
}

// A Permit dropped unused after the close gives its room back and wakes the receiver, which
// then sees the end.
TEST(Mpsc, AnUnusedPermitDroppedAfterCloseLetsTheEndCome) {
  auto [tx, rx] = spool::mpsc::channel<int>(2);
  std::optional<spool::mpsc::Permit<int>> permit = spool::block_on(tx.reserve());
  rx.close();
  HandPoller receiver;
  auto recv = rx.recv();
  EXPECT_TRUE(receiver.poll(recv).is_pending());
  permit.reset();
  EXPECT_EQ(receiver.wakes(), 1);
  EXPECT_EQ(receiver.poll(recv).value(), std::nullopt);
}

// A Permit counts as a sender: it may outlive the Sender it came from, and the receiver sees
// the end only after it.
TEST(Mpsc, APermitOutlivesItsSender) {
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  std::optional<spool::mpsc::Permit<int>> permit = spool::block_on(tx.reserve());
  { auto gone = std::move(tx); }
  EXPECT_FALSE(rx.is_closed());
  permit->send(3);
  permit.reset();
  EXPECT_EQ(drain(rx), (std::vector<int>{3}));
}

TEST(Mpsc, BadCapacitiesAndMovedFromHalvesAreClearErrors) {
  try {
    (void)spool::mpsc::channel<int>(0);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unbounded_channel"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)spool::mpsc::channel<int>(spool::mpsc::max_capacity + 1),
               std::invalid_argument);
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  auto moved_tx = std::move(tx);
  EXPECT_THROW((void)tx.send(1), std::logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(tx.is_closed());
  auto moved_rx = std::move(rx);
  EXPECT_THROW((void)rx.recv(), std::logic_error);  // NOLINT(bugprone-use-after-move)
}

TEST(Mpsc, ASendWaitingForRoomRefusesToMove) {
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  EXPECT_TRUE(spool::block_on(tx.send(1)));
  auto unpolled = tx.send(2);
  auto moved = std::move(unpolled);  // fine before the first poll
  HandPoller sender;
  EXPECT_TRUE(sender.poll(moved).is_pending());
  EXPECT_THROW({ auto again = std::move(moved); }, std::logic_error);
}

// --- between tasks and threads ---

constexpr std::uint64_t kPerProducer = 2'000;

Task<void> produce(spool::mpsc::Sender<std::uint64_t> tx, std::uint64_t base) {
  for (std::uint64_t i = 0; i < kPerProducer; ++i) EXPECT_TRUE(co_await tx.send(base + i));
}

Task<std::uint64_t> consume_sum(spool::mpsc::Receiver<std::uint64_t> rx) {
  std::uint64_t sum = 0;
  while (auto v = co_await rx.recv()) sum += *v;
  co_return sum;
}

class MpscAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(MpscAnyFlavor);

// Tasks and an outside thread send through a channel of capacity 4 (so they wait for room
// often); a task sums what it receives.
TEST_P(MpscAnyFlavor, TasksAndAThreadSendToATask) {
  auto rt = build();
  auto [tx, rx] = spool::mpsc::channel<std::uint64_t>(4);
  auto consumer = rt.spawn(consume_sum(std::move(rx)));
  for (std::uint64_t p = 0; p < 3; ++p) (void)rt.spawn(produce(tx, p * kPerProducer));
  std::thread outside([tx = tx]() mutable {
    for (std::uint64_t i = 0; i < kPerProducer; ++i) {
      EXPECT_TRUE(spool::block_on(tx.send(3 * kPerProducer + i)));
    }
  });
  { auto gone = std::move(tx); }
  constexpr std::uint64_t kTotal = 4 * kPerProducer;
  EXPECT_EQ(wait(rt, consumer), kTotal * (kTotal - 1) / 2);
  outside.join();
}

}  // namespace
