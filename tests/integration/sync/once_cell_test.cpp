// spool::OnceCell: set once, by set() or by the first initialiser that completes; waiters wait
// for the running initialiser and take its value; a failing or cancelled initialiser lets the
// next waiter initialise. Stepped by hand with counting wakers, then on both runtime flavours.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::Notify;
using spool::OnceCell;
using spool::OnceCellSetError;
using spool::Task;
using spool_test::HandPoller;

Task<int> value_now(int v) { co_return v; }

// An initialiser that waits for `go`, then gives `v` (or throws, if `fail`).
Task<int> value_after(Notify* go, int v, bool fail) {
  co_await go->notified();
  if (fail) throw std::runtime_error("the initialiser failed");
  co_return v;
}

// An initialiser function that counts its calls.
struct CountedInit {
  int* calls;
  int value;
  Task<int> operator()() const {
    ++*calls;
    return value_now(value);
  }
};

// An initialiser function that counts its calls and waits for `go`.
struct GatedInit {
  int* calls;
  Notify* go;
  int value;
  bool fail = false;
  Task<int> operator()() const {
    ++*calls;
    return value_after(go, value, fail);
  }
};

TEST(OnceCell, FirstGetOrInitInitialisesAndLaterOnesReuseTheValue) {
  OnceCell<int> cell;
  EXPECT_EQ(cell.get(), nullptr);
  EXPECT_FALSE(cell.initialized());
  int calls = 0;
  HandPoller party;
  auto first = cell.get_or_init(CountedInit{&calls, 7});
  auto p = party.poll(first);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 7);
  EXPECT_EQ(&p.value(), cell.get());  // a reference to the cell's value
  auto second = cell.get_or_init(CountedInit{&calls, 8});
  auto q = party.poll(second);
  ASSERT_TRUE(q.is_ready());
  EXPECT_EQ(q.value(), 7);
  EXPECT_EQ(calls, 1) << "an initialiser ran on a cell that was set";
  EXPECT_TRUE(cell.initialized());
}

TEST(OnceCell, ConstructedWithAValueIsSet) {
  OnceCell<std::string> cell("ready");
  ASSERT_NE(cell.get(), nullptr);
  EXPECT_EQ(*cell.get(), "ready");
  int calls = 0;
  HandPoller party;
  OnceCell<int> ints(3);
  auto t = ints.get_or_init(CountedInit{&calls, 4});
  auto p = party.poll(t);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 3);
  EXPECT_EQ(calls, 0);
}

TEST(OnceCell, SetStoresOnceAndThenFailsWithAClearError) {
  OnceCell<int> cell;
  cell.set(5);
  ASSERT_NE(cell.get(), nullptr);
  EXPECT_EQ(*cell.get(), 5);
  try {
    cell.set(6);
    FAIL() << "a second set() succeeded";
  } catch (const OnceCellSetError& e) {
    EXPECT_FALSE(e.is_initializing());
    EXPECT_NE(std::string(e.what()).find("already holds a value"), std::string::npos) << e.what();
  }
  EXPECT_EQ(*cell.get(), 5);
}

TEST(OnceCell, TrySetGivesTheRejectedValueBack) {
  OnceCell<std::string> cell;
  EXPECT_EQ(cell.try_set("first"), std::nullopt);
  EXPECT_EQ(*cell.get(), "first");
  std::optional<std::string> rejected = cell.try_set("second");
  ASSERT_TRUE(rejected.has_value());
  EXPECT_EQ(*rejected, "second");
  EXPECT_EQ(*cell.get(), "first");
  OnceCell<int> running;
  Notify go;
  int calls = 0;
  HandPoller party;
  auto init = running.get_or_init(GatedInit{&calls, &go, 1});
  EXPECT_TRUE(party.poll(init).is_pending());
  EXPECT_EQ(running.try_set(2), std::optional<int>(2)) << "set while an initialiser runs";
  go.notify_one();
  EXPECT_EQ(party.poll(init).value(), 1);
}

TEST(OnceCell, SetWhileAnInitialiserRunsFailsAndTheInitialiserWins) {
  OnceCell<int> cell;
  Notify go;
  int calls = 0;
  HandPoller party;
  auto init = cell.get_or_init(GatedInit{&calls, &go, 1});
  EXPECT_TRUE(party.poll(init).is_pending());
  try {
    cell.set(2);
    FAIL() << "set() succeeded while an initialiser ran";
  } catch (const OnceCellSetError& e) {
    EXPECT_TRUE(e.is_initializing());
    EXPECT_NE(std::string(e.what()).find("an initialiser is running"), std::string::npos);
  }
  go.notify_one();
  auto p = party.poll(init);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 1);
}

TEST(OnceCell, WaitersTakeTheRunningInitialisersValue) {
  OnceCell<int> cell;
  Notify go;
  int calls = 0;
  HandPoller a, b, c;
  auto first = cell.get_or_init(GatedInit{&calls, &go, 1});
  auto second = cell.get_or_init(GatedInit{&calls, &go, 2});
  auto third = cell.get_or_init(GatedInit{&calls, &go, 3});
  EXPECT_TRUE(a.poll(first).is_pending());
  EXPECT_TRUE(b.poll(second).is_pending());
  EXPECT_TRUE(c.poll(third).is_pending());
  EXPECT_EQ(calls, 1) << "a waiter ran its initialiser while another ran";
  go.notify_one();
  EXPECT_EQ(a.wakes(), 1);
  auto p = a.poll(first);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 1);
  EXPECT_EQ(b.wakes(), 1) << "setting the value must wake every waiter";
  EXPECT_EQ(c.wakes(), 1);
  auto q = b.poll(second);
  auto r = c.poll(third);
  ASSERT_TRUE(q.is_ready() && r.is_ready());
  EXPECT_EQ(q.value(), 1);
  EXPECT_EQ(r.value(), 1);
  EXPECT_EQ(calls, 1);
}

TEST(OnceCell, AFailingInitialiserThrowsToItsCallerAndTheNextWaiterInitialises) {
  OnceCell<int> cell;
  Notify go;
  int calls = 0;
  HandPoller a, b;
  auto failing = cell.get_or_init(GatedInit{&calls, &go, 1, true});
  auto next = cell.get_or_init(GatedInit{&calls, &go, 2});
  EXPECT_TRUE(a.poll(failing).is_pending());
  EXPECT_TRUE(b.poll(next).is_pending());
  go.notify_one();
  EXPECT_THROW((void)a.poll(failing), std::runtime_error);
  EXPECT_EQ(cell.get(), nullptr);
  EXPECT_EQ(b.wakes(), 1) << "the failed initialiser did not pass its turn on";
  EXPECT_TRUE(b.poll(next).is_pending());  // now running its own initialiser
  EXPECT_EQ(calls, 2);
  go.notify_one();
  auto p = b.poll(next);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 2);
}

TEST(OnceCell, AnInitialiserThatThrowsWhenCalledLetsTheNextCallerTry) {
  OnceCell<int> cell;
  HandPoller party;
  auto throwing = cell.get_or_init([]() -> Task<int> { throw std::runtime_error("no future"); });
  EXPECT_THROW((void)party.poll(throwing), std::runtime_error);
  int calls = 0;
  auto next = cell.get_or_init(CountedInit{&calls, 9});
  auto p = party.poll(next);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 9);
}

TEST(OnceCell, ADroppedInitialiserLetsAWaiterInitialise) {
  OnceCell<int> cell;
  Notify go;
  int calls = 0;
  HandPoller a, b;
  auto dropped = std::make_optional(cell.get_or_init(GatedInit{&calls, &go, 1}));
  auto waiter = cell.get_or_init(CountedInit{&calls, 2});
  EXPECT_TRUE(a.poll(*dropped).is_pending());
  EXPECT_TRUE(b.poll(waiter).is_pending());
  dropped.reset();  // cancelled while its initialiser waits
  EXPECT_EQ(b.wakes(), 1) << "the cancelled initialiser did not pass its turn on";
  auto p = b.poll(waiter);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 2);
  EXPECT_EQ(calls, 2);
}

// An initialiser that takes `from`'s value (get_or_init with CountedInit{calls, 5}) plus one.
Task<int> one_more_than(OnceCell<int>* from, int* calls) {
  Task<int&> get = from->get_or_init(CountedInit{calls, 5});
  co_return co_await std::move(get) + 1;
}

struct OneMoreThanInit {
  OnceCell<int>* from;
  int* calls;
  Task<int> operator()() const { return one_more_than(from, calls); }
};

TEST(OnceCell, AGetOrInitOfTheSameCellInsideItsInitialiserThrows) {
  OnceCell<int> cell;
  int calls = 0;
  HandPoller party;
  auto outer = cell.get_or_init(OneMoreThanInit{&cell, &calls});
  try {
    (void)party.poll(outer);
    FAIL() << "a get_or_init inside its own cell's initialiser did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("same cell's initialiser"), std::string::npos) << e.what();
  }
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(cell.get(), nullptr);
  auto next = cell.get_or_init(CountedInit{&calls, 6});  // the failed one passed its turn on
  auto p = party.poll(next);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 6);
}

TEST(OnceCell, AnInitialiserMayGetOrInitAnotherCell) {
  OnceCell<int> outer, inner;
  int calls = 0;
  HandPoller party;
  auto get = outer.get_or_init(OneMoreThanInit{&inner, &calls});
  auto p = party.poll(get);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 6);
  EXPECT_EQ(*inner.get(), 5);
  EXPECT_EQ(calls, 1);
}

// An initialiser that fails and two waiters behind it; the first waiter is dropped while it
// waits, or once the failure granted it the turn (never polled again, it passes the turn on
// when destroyed). Either way the last waiter initialises.
void drop_a_waiter_and_check_the_last_initialises(bool after_the_failure) {
  OnceCell<int> cell;
  Notify go;
  int calls = 0;
  HandPoller a, b, c;
  auto init = cell.get_or_init(GatedInit{&calls, &go, 1, true});
  auto dropped = std::make_optional(cell.get_or_init(CountedInit{&calls, 2}));
  auto last = cell.get_or_init(CountedInit{&calls, 3});
  EXPECT_TRUE(a.poll(init).is_pending());
  EXPECT_TRUE(b.poll(*dropped).is_pending());
  EXPECT_TRUE(c.poll(last).is_pending());
  if (!after_the_failure) dropped.reset();
  go.notify_one();
  EXPECT_THROW((void)a.poll(init), std::runtime_error);
  if (after_the_failure) {
    EXPECT_EQ(b.wakes(), 1) << "the failed initialiser did not pass its turn on";
    EXPECT_EQ(c.wakes(), 0);
    dropped.reset();
  }
  EXPECT_EQ(c.wakes(), 1) << "the turn was lost";
  auto p = c.poll(last);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 3);
  EXPECT_EQ(calls, 2);
}

TEST(OnceCell, ADroppedWaiterLosesNothing) { drop_a_waiter_and_check_the_last_initialises(false); }

TEST(OnceCell, AWaiterDroppedAfterItWasGrantedTheTurnPassesItOn) {
  drop_a_waiter_and_check_the_last_initialises(true);
}

// A hand-written initialiser future (not a Task), ready at once; counts the destructions of
// instances that were not moved from.
class ReadyFuture {
 public:
  ReadyFuture(int value, int* destroyed) : value_(value), destroyed_(destroyed) {}
  ReadyFuture(ReadyFuture&& o) noexcept
      : value_(o.value_), destroyed_(std::exchange(o.destroyed_, nullptr)) {}
  ReadyFuture& operator=(ReadyFuture&&) = delete;
  ~ReadyFuture() {
    if (destroyed_ != nullptr) ++*destroyed_;
  }
  spool::Poll<int> poll(spool::Context&) { return value_; }

 private:
  int value_;
  int* destroyed_;
};

struct ReadyFutureInit {
  int* destroyed;
  ReadyFuture operator()() const { return ReadyFuture(11, destroyed); }
};

TEST(OnceCell, AnInitialiserMayReturnAnyFuture) {
  OnceCell<int> cell;
  int destroyed = 0;
  HandPoller party;
  auto t = cell.get_or_init(ReadyFutureInit{&destroyed});
  auto p = party.poll(t);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), 11);
  EXPECT_EQ(destroyed, 1) << "the initialiser's future must be destroyed exactly once";
}

Task<const char*> c_string() { co_return "made from a const char*"; }

TEST(OnceCell, AnInitialiserMayGiveAnythingTheValueIsMadeFrom) {
  OnceCell<std::string> cell;
  HandPoller party;
  auto t = cell.get_or_init([] { return c_string(); });
  auto p = party.poll(t);
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), "made from a const char*");
  EXPECT_EQ(*cell.get(), "made from a const char*");
}

// Destroys a cell with an initialiser and a waiter: while the initialiser runs, or once it
// set the cell and woke the waiter, which has not run yet (it would still touch the cell).
void destroy_with_an_unfinished_get_or_init(bool after_the_store) {
  Notify go;
  int calls = 0;
  auto cell = std::make_unique<OnceCell<int>>();
  auto init = cell->get_or_init(GatedInit{&calls, &go, 1});
  // Leaked, so that nothing touches the freed cell if the destructor did not abort.
  auto* waiter = new Task<int&>(cell->get_or_init(GatedInit{&calls, &go, 2}));
  HandPoller a, b;
  (void)a.poll(init);
  (void)b.poll(*waiter);
  if (after_the_store) {
    go.notify_one();
    (void)a.poll(init);  // sets the cell and wakes the waiter
  }
  cell.reset();
}

constexpr const char* kDestroyedInUse =
    "spool::OnceCell destroyed while a get_or_init initialises or waits";

TEST(OnceCellDeathTest, DestroyedWhileAnInitialiserRunsAbortsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(destroy_with_an_unfinished_get_or_init(false), kDestroyedInUse);
}

TEST(OnceCellDeathTest, DestroyedBeforeAWokenWaiterRanAbortsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(destroy_with_an_unfinished_get_or_init(true), kDestroyedInUse);
}

class OnceCellAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(OnceCellAnyFlavor);

// Says it started, then waits until cancelled.
Task<int> announce_then_hang(spool::oneshot::Sender<int>* started) {
  started->send(1);
  spool_rt_test::NeverReady never;
  co_await never;
  co_return 1;
}

struct HangingInit {
  spool::oneshot::Sender<int>* started;
  Task<int> operator()() const { return announce_then_hang(started); }
};

// get_or_init with `init`, named before the co_await (docs/core.md: g++ 12 and temporaries).
template <class Init>
Task<int> get_or_init_with(OnceCell<int>* cell, Init init) {
  Task<int&> get = cell->get_or_init(std::move(init));
  co_return co_await std::move(get);
}

// The initialising task is aborted while its initialiser waits: a task that came later
// initialises (it would wait forever if the aborted one kept its turn).
TEST_P(OnceCellAnyFlavor, AnAbortedInitialiserTaskLetsTheNextInitialise) {
  auto rt = build();
  OnceCell<int> cell;
  auto [started_tx, started_rx] = spool::oneshot::channel<int>();
  auto first = rt.spawn(get_or_init_with(&cell, HangingInit{&started_tx}));
  EXPECT_EQ(wait(rt, std::move(started_rx)), 1);  // the first initialiser runs
  int calls = 0;                                  // written by the second initialiser only
  auto second = rt.spawn(get_or_init_with(&cell, CountedInit{&calls, 2}));
  first.abort();
  EXPECT_EQ(wait(rt, std::move(second)), 2);
  EXPECT_THROW(wait(rt, std::move(first)), spool::JoinError);
  EXPECT_EQ(*cell.get(), 2);
  EXPECT_EQ(calls, 1);
}

}  // namespace
