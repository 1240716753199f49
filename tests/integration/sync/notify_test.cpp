// spool::Notify: the stored permit of notify_one, FIFO waking, notify_waiters (no permit;
// futures made before it complete), cancellation (a notify_one given to a dropped waiter
// passes on), the address-stability rule, stepped by hand; then ping-pong between tasks of
// both runtime flavours and an outside thread.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Notified;
using spool::Notify;
using spool_test::HandPoller;

// Two parties, each waiting on its own Notified; `first` was linked first.
struct TwoWaiters {
  explicit TwoWaiters(Notify& n)
      : first(std::make_unique<Notified>(n.notified())), second(n.notified()) {
    EXPECT_TRUE(first_party.poll(*first).is_pending());
    EXPECT_TRUE(second_party.poll(second).is_pending());
  }
  HandPoller first_party, second_party;
  std::unique_ptr<Notified> first;
  Notified second;
};

TEST(Notify, NotifyOneWithoutWaitersStoresOnePermit) {
  Notify n;
  HandPoller party;
  n.notify_one();
  n.notify_one();  // still one permit
  Notified first = n.notified();
  Notified second = n.notified();
  EXPECT_TRUE(party.poll(first).is_ready());
  EXPECT_TRUE(party.poll(second).is_pending());
  n.notify_one();
  EXPECT_EQ(party.wakes(), 1);
  EXPECT_TRUE(party.poll(second).is_ready());
}

TEST(Notify, NotifyOneWakesTheFirstWaiter) {
  Notify n;
  TwoWaiters w(n);
  n.notify_one();
  EXPECT_EQ(w.first_party.wakes(), 1);
  EXPECT_EQ(w.second_party.wakes(), 0);
  EXPECT_TRUE(w.first_party.poll(*w.first).is_ready());
  EXPECT_TRUE(w.second_party.poll(w.second).is_pending());
  n.notify_one();
  EXPECT_TRUE(w.second_party.poll(w.second).is_ready());
}

TEST(Notify, NotifyWaitersWakesEveryWaiterAndStoresNoPermit) {
  Notify n;
  HandPoller party;
  Notified a = n.notified();
  Notified b = n.notified();
  Notified made_before = n.notified();  // not polled before the call: completes too
  EXPECT_TRUE(party.poll(a).is_pending());
  EXPECT_TRUE(party.poll(b).is_pending());
  n.notify_waiters();
  EXPECT_EQ(party.wakes(), 2);
  EXPECT_TRUE(party.poll(a).is_ready());
  EXPECT_TRUE(party.poll(b).is_ready());
  EXPECT_TRUE(party.poll(made_before).is_ready());
  Notified after = n.notified();
  EXPECT_TRUE(party.poll(after).is_pending());  // no permit was stored
}

TEST(Notify, NotifyWaitersReachesManyWaiters) {
  constexpr int kWaiters = 70;  // more than two WakeList batches
  Notify n;
  HandPoller party;
  std::vector<std::unique_ptr<Notified>> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.push_back(std::make_unique<Notified>(n.notified()));
    EXPECT_TRUE(party.poll(*waiters.back()).is_pending());
  }
  n.notify_waiters();
  EXPECT_EQ(party.wakes(), kWaiters);
  for (auto& w : waiters) EXPECT_TRUE(party.poll(*w).is_ready());
}

TEST(Notify, ANotifyOneGivenToADroppedWaiterGoesToTheNext) {
  Notify n;
  TwoWaiters w(n);
  n.notify_one();  // picks `first`...
  EXPECT_EQ(w.first_party.wakes(), 1);
  w.first.reset();  // ...which is dropped before it saw it
  EXPECT_EQ(w.second_party.wakes(), 1);
  EXPECT_TRUE(w.second_party.poll(w.second).is_ready());
}

TEST(Notify, ANotifyOneGivenToTheLastDroppedWaiterIsStored) {
  Notify n;
  HandPoller party;
  auto only = std::make_unique<Notified>(n.notified());
  EXPECT_TRUE(party.poll(*only).is_pending());
  n.notify_one();
  only.reset();
  Notified later = n.notified();
  EXPECT_TRUE(party.poll(later).is_ready());
}

TEST(Notify, ACancelledWaiterTakesNothing) {
  Notify n;
  TwoWaiters w(n);
  w.first.reset();
  n.notify_one();
  EXPECT_EQ(w.first_party.wakes(), 0);
  EXPECT_TRUE(w.second_party.poll(w.second).is_ready());
  Notified third = n.notified();
  EXPECT_TRUE(w.second_party.poll(third).is_pending());  // no permit left over
}

TEST(Notify, MisuseIsAClearError) {
  Notify n;
  HandPoller party;
  Notified fresh = n.notified();
  Notified waiting = std::move(fresh);  // not polled yet: fine
  EXPECT_TRUE(party.poll(waiting).is_pending());
  try {
    Notified moved = std::move(waiting);
    ADD_FAILURE() << "moving a waiting Notified did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("spool::Notified moved while it waits"), std::string::npos)
        << e.what();
  }
  n.notify_one();
  EXPECT_TRUE(party.poll(waiting).is_ready());
  EXPECT_THROW(party.poll(waiting), std::logic_error);  // polled after ready
}

// --- on runtimes and threads ---

class NotifyAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(NotifyAnyFlavor);

// Ping-pong: each side waits for its turn, then gives the other one. A lost wake-up hangs.
spool::Task<int> pong(Notify* mine, Notify* theirs, int rounds) {
  int done = 0;
  for (int i = 0; i < rounds; ++i) {
    co_await mine->notified();
    theirs->notify_one();
    ++done;
  }
  co_return done;
}

TEST_P(NotifyAnyFlavor, PingPongWithAnOutsideThread) {
  constexpr int kRounds = 2000;
  auto rt = build();
  Notify to_task, to_thread;
  spool::JoinHandle<int> task = rt.spawn(pong(&to_task, &to_thread, kRounds));
  int thread_rounds = 0;
  std::thread outside([&] {
    for (int i = 0; i < kRounds; ++i) {
      to_task.notify_one();
      spool::block_on(to_thread.notified());
      ++thread_rounds;
    }
  });
  EXPECT_EQ(wait(rt, std::move(task)), kRounds);  // a lost wake-up would hang instead
  outside.join();
  EXPECT_EQ(thread_rounds, kRounds);
}

}  // namespace
