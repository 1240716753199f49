// spool::watch: the latest value and the seen version (borrow, borrow_and_update,
// has_changed, changed), the kinds of send (refused without receivers, send_replace,
// send_modify, send_if_modified), closure from each side (changed() gives false, closed()),
// copies and subscribe, cancellation of a waiting changed() (nothing lost), the latest waker,
// misuse; stepped by hand, then under block_on with an outside thread and between tasks of
// both runtime flavours.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "spool/sync/watch.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool_test::HandPoller;

TEST(Watch, BorrowSeesTheLatestValueAndHasChangedTracksTheSeenVersion) {
  auto [tx, rx] = spool::watch::channel<int>(1);
  EXPECT_FALSE(rx.has_changed());  // the initial value counts as seen
  EXPECT_EQ(*rx.borrow(), 1);
  auto sent = tx.send(2);
  EXPECT_TRUE(sent);
  EXPECT_EQ(sent.receivers(), 1u);
  EXPECT_TRUE(rx.has_changed());
  {
    auto r = rx.borrow();
    EXPECT_EQ(*r, 2);
    EXPECT_TRUE(r.has_changed());
  }
  EXPECT_TRUE(rx.has_changed());  // borrow() does not mark it seen
  {
    auto r = rx.borrow_and_update();
    EXPECT_EQ(r.get(), 2);
    EXPECT_TRUE(r.has_changed());
  }
  EXPECT_FALSE(rx.has_changed());
  EXPECT_FALSE(rx.borrow().has_changed());
}

TEST(Watch, ChangedWaitsForANewVersionAndMarksItSeen) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  HandPoller party;
  auto changed = rx.changed();
  EXPECT_TRUE(party.poll(changed).is_pending());
  (void)tx.send(1);
  EXPECT_EQ(party.wakes(), 1);
  EXPECT_TRUE(party.poll(changed).value());
  EXPECT_FALSE(rx.has_changed());
  EXPECT_EQ(*rx.borrow(), 1);
  auto next = rx.changed();
  EXPECT_TRUE(party.poll(next).is_pending());
  EXPECT_EQ(party.live_wakers(), 1);
}

TEST(Watch, OnlyTheLatestValueIsKept) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  for (int i = 1; i <= 3; ++i) (void)tx.send(i);
  EXPECT_TRUE(spool::block_on(rx.changed()));  // ready at once: one change for three sends
  EXPECT_EQ(*rx.borrow(), 3);
  HandPoller party;
  auto changed = rx.changed();
  EXPECT_TRUE(party.poll(changed).is_pending());
}

TEST(Watch, ASendWakesEveryReceiverWithItsLatestWaker) {
  auto [tx, rx1] = spool::watch::channel<int>(0);
  auto rx2 = tx.subscribe();
  HandPoller first, second, third;
  auto c1 = rx1.changed();
  auto c2 = rx2.changed();
  EXPECT_TRUE(first.poll(c1).is_pending());
  EXPECT_TRUE(second.poll(c1).is_pending());  // c1 now wakes `second`
  EXPECT_TRUE(third.poll(c2).is_pending());
  EXPECT_EQ(first.live_wakers(), 0);
  EXPECT_EQ(tx.send(7).receivers(), 2u);
  EXPECT_EQ(first.wakes(), 0);
  EXPECT_EQ(second.wakes(), 1);
  EXPECT_EQ(third.wakes(), 1);
  EXPECT_TRUE(second.poll(c1).value());
  EXPECT_TRUE(third.poll(c2).value());
}

TEST(Watch, SendReplaceSendModifyAndSendIfModified) {
  auto [tx, rx] = spool::watch::channel<std::string>("a");
  HandPoller party;
  EXPECT_EQ(tx.send_replace("b"), "a");
  EXPECT_TRUE(rx.has_changed());
  EXPECT_EQ(*rx.borrow_and_update(), "b");
  tx.send_modify([](std::string& s) { s += "c"; });
  EXPECT_EQ(*rx.borrow_and_update(), "bc");
  auto changed = rx.changed();
  EXPECT_TRUE(party.poll(changed).is_pending());
  EXPECT_FALSE(tx.send_if_modified([](std::string&) { return false; }));
  EXPECT_EQ(party.wakes(), 0);  // no new version: nobody woken
  EXPECT_FALSE(rx.has_changed());
  EXPECT_TRUE(tx.send_if_modified([](std::string& s) {
    s = "d";
    return true;
  }));
  EXPECT_EQ(party.wakes(), 1);
  EXPECT_TRUE(party.poll(changed).value());
  EXPECT_EQ(*tx.borrow(), "d");
  EXPECT_THROW(tx.send_modify([](std::string&) { throw std::runtime_error("modify failed"); }),
               std::runtime_error);
  EXPECT_FALSE(rx.has_changed());  // a modify that threw made no version
}

TEST(Watch, SendWithoutReceiversIsRefusedAndKeepsTheOldValue) {
  auto [tx, rx] = spool::watch::channel<std::string>("old");
  { auto gone = std::move(rx); }
  EXPECT_TRUE(tx.is_closed());
  auto refused = tx.send("new");
  EXPECT_FALSE(refused);
  EXPECT_EQ(refused.value(), "new");
  EXPECT_EQ(*tx.borrow(), "old");
  EXPECT_EQ(tx.send_replace("replaced"), "old");  // stores either way
  auto rx2 = tx.subscribe();                      // counts the current value as seen
  EXPECT_FALSE(rx2.has_changed());
  EXPECT_EQ(*rx2.borrow(), "replaced");
  EXPECT_FALSE(tx.is_closed());
  EXPECT_TRUE(tx.send("again"));
  EXPECT_TRUE(rx2.has_changed());
}

TEST(Watch, WhenEverySenderIsGoneChangedGivesTheLastValueThenFalse) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  auto tx2 = tx;
  HandPoller party;
  auto changed = rx.changed();
  EXPECT_TRUE(party.poll(changed).is_pending());
  (void)tx.send(1);
  { auto gone = std::move(tx); }
  EXPECT_FALSE(rx.is_closed());  // tx2 is still there
  { auto gone = std::move(tx2); }
  EXPECT_TRUE(rx.is_closed());
  EXPECT_TRUE(party.poll(changed).value());  // 1 was not seen yet
  EXPECT_FALSE(spool::block_on(rx.changed()));
  EXPECT_FALSE(spool::block_on(rx.changed()));  // the end stays the end
  EXPECT_EQ(*rx.borrow(), 1);                   // the last value stays readable
}

TEST(Watch, TheLastSenderGoingAwayWakesAWaitingReceiver) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  HandPoller party;
  auto changed = rx.changed();
  EXPECT_TRUE(party.poll(changed).is_pending());
  { auto gone = std::move(tx); }
  EXPECT_EQ(party.wakes(), 1);
  auto r = party.poll(changed);
  ASSERT_TRUE(r.is_ready());
  EXPECT_FALSE(r.value());
}

TEST(Watch, SenderClosedCompletesWhenTheLastReceiverIsGone) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  auto copy = rx;
  EXPECT_EQ(tx.receiver_count(), 2u);
  HandPoller party;
  auto closed = tx.closed();
  EXPECT_TRUE(party.poll(closed).is_pending());
  { auto gone = std::move(rx); }
  EXPECT_EQ(party.wakes(), 0);  // the copy is still there
  EXPECT_TRUE(party.poll(closed).is_pending());
  { auto gone = std::move(copy); }
  EXPECT_EQ(party.wakes(), 1);
  EXPECT_TRUE(party.poll(closed).is_ready());
  EXPECT_EQ(tx.receiver_count(), 0u);
  spool::block_on(tx.closed());  // ready at once now (a hang would fail)
}

// A waiting closed() future holds a share of the channel: it may outlive its Sender, and is
// completed by the last receiver's going (ASan would catch a use after free).
TEST(Watch, ClosedMayOutliveItsSender) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  auto closed = tx.closed();
  HandPoller party;
  EXPECT_TRUE(party.poll(closed).is_pending());
  { auto gone = std::move(tx); }
  EXPECT_TRUE(party.poll(closed).is_pending());
  { auto gone = std::move(rx); }
  EXPECT_EQ(party.wakes(), 1);
  EXPECT_TRUE(party.poll(closed).is_ready());
  auto moved = std::move(closed);  // done: movable, and the source is empty
  EXPECT_THROW((void)party.poll(closed), std::logic_error);
}

TEST(Watch, ACopiedReceiverKeepsItsSeenVersion) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  (void)tx.send(1);
  auto unseen = rx;
  (void)rx.borrow_and_update();
  auto seen = rx;
  EXPECT_TRUE(unseen.has_changed());
  EXPECT_FALSE(seen.has_changed());
  EXPECT_FALSE(rx.has_changed());
}

TEST(Watch, AChangedCancelledWhileWaitingLosesNothing) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  HandPoller party;
  {
    auto changed = rx.changed();
    EXPECT_TRUE(party.poll(changed).is_pending());
  }  // cancelled while waiting
  EXPECT_EQ(party.live_wakers(), 0);
  (void)tx.send(1);
  EXPECT_EQ(party.wakes(), 0);
  EXPECT_TRUE(rx.has_changed());  // still unseen
  {
    auto changed = rx.changed();
    EXPECT_TRUE(party.poll(changed).value());
  }
  {
    auto changed = rx.changed();
    EXPECT_TRUE(party.poll(changed).is_pending());
    (void)tx.send(2);
    EXPECT_EQ(party.wakes(), 1);
  }  // cancelled after it was woken, before it saw 2
  EXPECT_EQ(party.live_wakers(), 0);
  EXPECT_TRUE(rx.has_changed());
  EXPECT_EQ(*rx.borrow_and_update(), 2);
}

TEST(Watch, MisuseIsAClearError) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  {
    HandPoller party;
    auto fresh = rx.changed();
    auto waiting = std::move(fresh);  // not polled yet: fine
    EXPECT_TRUE(party.poll(waiting).is_pending());
    try {
      auto moved = std::move(waiting);
      ADD_FAILURE() << "moving a waiting Changed did not throw";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("spool::watch::Changed moved while it waits"),
                std::string::npos)
          << e.what();
    }
    auto closed = tx.closed();
    EXPECT_TRUE(party.poll(closed).is_pending());
    EXPECT_THROW(auto moved = std::move(closed), std::logic_error);
  }
  auto tx2 = std::move(tx);
  try {
    (void)tx.send(1);  // NOLINT(bugprone-use-after-move)
    ADD_FAILURE() << "a moved-from sender did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("spool::watch::Sender::send on a moved-from handle"),
              std::string::npos)
        << e.what();
  }
  auto rx2 = std::move(rx);
  EXPECT_THROW((void)rx.borrow(), std::logic_error);  // NOLINT(bugprone-use-after-move)
}

// --- under block_on, on runtimes and threads ---

TEST(Watch, BlockOnFollowsAnOutsideThreadToItsLastValue) {
  constexpr int kSends = 2000;
  auto [tx, rx] = spool::watch::channel<int>(0);
  std::thread sender([tx = std::move(tx)] {
    for (int i = 0; i < kSends; ++i) tx.send_modify([](int& v) { ++v; });
  });
  int last = 0;
  while (spool::block_on(rx.changed())) {
    const int v = *rx.borrow_and_update();
    EXPECT_GT(v, last);  // versions only move forward
    last = v;
  }
  sender.join();
  EXPECT_EQ(last, kSends);
}

class WatchAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(WatchAnyFlavor);

// Follows the value until it reaches `target` (or the senders are gone), then drops `rx`.
// (No co_await inside `&&`: g++ 12 evaluates it even when the left side is false.)
spool::Task<int> follow(spool::watch::Receiver<int> rx, int target) {
  int last = 0;
  while (last < target) {
    if (!co_await rx.changed()) break;
    last = *rx.borrow_and_update();
  }
  co_return last;
}

spool::Task<void> count_up(spool::watch::Sender<int> tx, int n) {
  for (int i = 0; i < n; ++i) {
    tx.send_modify([](int& v) { ++v; });
    if (i % 16 == 0) co_await spool::yield_now();
  }
}

// Holds a sender (the channel stays open) until every receiver is gone.
spool::Task<void> wait_closed(spool::watch::Sender<int> tx) { co_await tx.closed(); }

TEST_P(WatchAnyFlavor, TasksFollowATaskAndAThreadToTheFinalValue) {
  constexpr int kSends = 500;
  auto rt = build();
  auto [tx, rx] = spool::watch::channel<int>(0);
  std::vector<spool::JoinHandle<int>> followers;
  for (int i = 0; i < 3; ++i) followers.push_back(rt.spawn(follow(rx, 2 * kSends)));
  auto closed = rt.spawn(wait_closed(tx));
  { auto unused = std::move(rx); }
  auto producer = rt.spawn(count_up(tx, kSends));
  std::thread outside([tx = tx] {
    for (int i = 0; i < kSends; ++i) tx.send_modify([](int& v) { ++v; });
  });
  { auto gone = std::move(tx); }
  outside.join();
  wait(rt, std::move(producer));
  for (auto& f : followers) EXPECT_EQ(wait(rt, std::move(f)), 2 * kSends);
  wait(rt, std::move(closed));  // the followers dropped every receiver: closed() completes
}

}  // namespace
