// The reactor hook: a future installs a ReactorHook through its Context, and block_on parks
// in it; the slot refuses a second, different reactor; nested contexts share the slot.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <type_traits>

#include "spool/spool.hpp"
#include "support/eventfd_reactor.hpp"
#include "support/futures.hpp"
#include "support/sync.hpp"

namespace {

using spool::Context;
using spool::Poll;
using spool::ReactorSlot;
using spool::Waker;
using spool_test::EventfdReactor;
using spool_test::poll_fn;
using spool_test::Signal;
using spool_test::spin_until;
using spool_test::WithReactor;
using spool_test::YieldNow;

// Fires `signal` once `reactor` has been parked in (the park counter is bumped on entry,
// after block_on's parker has committed to parking there), so the fire must interrupt a
// park in that reactor.
std::thread fire_once_parked_in(const std::shared_ptr<EventfdReactor>& reactor,
                                const Signal& signal) {
  return std::thread([reactor, signal] {
    spin_until([&] { return reactor->parks() >= 1; });
    signal.fire();
  });
}

TEST(ReactorHook, BlockOnParksInTheInstalledReactorAndAWakeFromAnotherThreadEndsThePark) {
  auto reactor = std::make_shared<EventfdReactor>();
  Signal signal;
  auto leaf = WithReactor(reactor, signal.future());
  std::thread firer = fire_once_parked_in(reactor, signal);
  spool::block_on(leaf);
  firer.join();
  EXPECT_GE(reactor->parks(), 1);    // block_on parked in the reactor...
  EXPECT_GE(reactor->unparks(), 1);  // ...and the waker, woken on another thread, unparked it
  EXPECT_GE(reactor->woken(), 1);    // (that park returned because of the unpark token)
  EXPECT_EQ(signal.polls(), 2);
  EXPECT_EQ(leaf.installed(), 2);  // installing the same reactor on every poll succeeded
}

TEST(ReactorHook, AReactorInstalledOnALaterPollIsUsedForTheNextPark) {
  auto reactor = std::make_shared<EventfdReactor>();
  Signal signal;
  int polls = 0;
  auto fut = poll_fn([&](Context& cx) -> Poll<void> {
    if (++polls == 1) {  // first poll: no reactor yet
      EXPECT_EQ(cx.reactor(), nullptr);
      cx.waker().wake_by_ref();
      return spool::pending;
    }
    EXPECT_TRUE(cx.install_reactor(reactor));
    return signal.future().poll(cx);
  });
  std::thread firer = fire_once_parked_in(reactor, signal);
  spool::block_on(fut);
  firer.join();
  EXPECT_GE(reactor->parks(), 1);
  EXPECT_EQ(polls, 3);
}

TEST(ReactorHook, AWakeDuringPollWithAReactorInstalledCausesOneMorePoll) {
  auto reactor = std::make_shared<EventfdReactor>();
  int polls = 0;
  auto leaf = WithReactor(reactor, YieldNow(1, &polls));
  spool::block_on(leaf);
  EXPECT_EQ(polls, 2);
}

TEST(ReactorHook, ADifferentReactorIsRefusedInTheSameBlockOn) {
  static_assert(std::is_base_of_v<std::logic_error, spool::ReactorConflict>);
  auto first = std::make_shared<EventfdReactor>();
  auto second = std::make_shared<EventfdReactor>();
  Signal signal;
  int polls = 0;
  int conflicts = 0;
  auto fut = poll_fn([&](Context& cx) -> Poll<void> {
    ++polls;
    EXPECT_TRUE(cx.install_reactor(first));
    EXPECT_FALSE(cx.install_reactor(second));
    try {
      cx.install_reactor_or_throw(second);
      ADD_FAILURE() << "install_reactor_or_throw accepted a second, different reactor";
    } catch (const spool::ReactorConflict& e) {
      ++conflicts;
      EXPECT_NE(std::string(e.what()).find("different reactor"), std::string::npos) << e.what();
    }
    // The same reactor again is accepted by both forms.
    EXPECT_TRUE(cx.install_reactor(first));
    EXPECT_NO_THROW(cx.install_reactor_or_throw(first));
    EXPECT_EQ(cx.reactor(), first.get());  // the refused ones changed nothing
    return signal.future().poll(cx);
  });
  std::thread firer = fire_once_parked_in(first, signal);
  spool::block_on(fut);
  firer.join();
  EXPECT_EQ(polls, 2);
  EXPECT_EQ(conflicts, 2);
  EXPECT_GE(first->parks(), 1);
  EXPECT_EQ(second->parks(), 0);  // the refused reactor was never parked in
  EXPECT_EQ(second->unparks(), 0);
}

TEST(ReactorHook, AContextWithoutASlotRefusesEveryReactor) {
  auto reactor = std::make_shared<EventfdReactor>();
  Waker w = Waker::noop();
  Context no_slot(w);
  Context null_slot(w, static_cast<ReactorSlot*>(nullptr));
  Context nested(w, no_slot);
  for (Context* cx : {&no_slot, &null_slot, &nested}) {
    EXPECT_EQ(cx->reactor_slot(), nullptr);
    EXPECT_FALSE(cx->install_reactor(reactor));
    EXPECT_EQ(cx->reactor(), nullptr);
    try {
      cx->install_reactor_or_throw(reactor);
      ADD_FAILURE() << "install_reactor_or_throw succeeded without a slot";
    } catch (const spool::ReactorConflict& e) {
      EXPECT_NE(std::string(e.what()).find("no reactor-hook slot"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(reactor.use_count(), 1);  // nobody kept it
}

TEST(ReactorHook, ASlotKeepsTheFirstReactorAndAcceptsOnlyItAgain) {
  auto first = std::make_shared<EventfdReactor>();
  auto second = std::make_shared<EventfdReactor>();
  ReactorSlot slot;
  EXPECT_EQ(slot.hook(), nullptr);
  EXPECT_TRUE(slot.install(first));
  EXPECT_EQ(slot.hook(), first);
  EXPECT_TRUE(slot.install(first));
  EXPECT_FALSE(slot.install(second));
  EXPECT_EQ(slot.hook(), first);
  EXPECT_EQ(second.use_count(), 1);  // the refused reactor is not kept
}

TEST(ReactorHook, ANestedContextSharesTheSlotBothWays) {
  auto first = std::make_shared<EventfdReactor>();
  auto second = std::make_shared<EventfdReactor>();
  Waker outer_waker = Waker::noop();
  Waker inner_waker = Waker::noop();
  {
    // Installed through the nested context: seen through the parent.
    ReactorSlot slot;
    Context parent(outer_waker, &slot);
    Context child(inner_waker, parent);
    EXPECT_EQ(&child.waker(), &inner_waker);  // its own waker...
    EXPECT_EQ(child.reactor_slot(), &slot);   // ...and the parent's slot
    EXPECT_TRUE(child.install_reactor(first));
    EXPECT_EQ(parent.reactor(), first.get());
    EXPECT_EQ(slot.hook(), first);
    EXPECT_FALSE(parent.install_reactor(second));
    EXPECT_TRUE(parent.install_reactor(first));
  }
  {
    // Installed through the parent: seen through the nested contexts, which also refuse
    // another reactor.
    ReactorSlot slot;
    Context parent(outer_waker, &slot);
    EXPECT_TRUE(parent.install_reactor(first));
    Context child(inner_waker, parent);
    Context grandchild(outer_waker, child);
    EXPECT_EQ(child.reactor(), first.get());
    EXPECT_EQ(grandchild.reactor(), first.get());
    EXPECT_FALSE(grandchild.install_reactor(second));
    EXPECT_THROW(child.install_reactor_or_throw(second), spool::ReactorConflict);
    EXPECT_TRUE(grandchild.install_reactor(first));
  }
}

TEST(ReactorHook, AReactorInstalledThroughANestedContextIsParkedInByBlockOn) {
  auto reactor = std::make_shared<EventfdReactor>();
  Signal signal;
  auto leaf = WithReactor(reactor, signal.future());
  // A combinator polling its child with a nested context (here with the same waker).
  auto combinator = poll_fn([&leaf](Context& cx) -> Poll<void> {
    Context inner(cx.waker(), cx);
    return leaf.poll(inner);
  });
  std::thread firer = fire_once_parked_in(reactor, signal);
  spool::block_on(combinator);
  firer.join();
  EXPECT_GE(reactor->parks(), 1);
  EXPECT_EQ(leaf.installed(), 2);
}

}  // namespace
