// JoinSet::try_join_next: takes a finished task without waiting (its output, or its
// JoinError), nullopt while none has finished; a spent cooperative budget does not hide a
// finished task; join_next still wakes for the tasks it looked at. Both runtime flavours.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"
#include "support/rt_flavor.hpp"

namespace spool_comb_test {
namespace {

class TryJoinNextAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(TryJoinNextAnyFlavor);

static_assert(
    std::is_same_v<decltype(std::declval<JoinSet<int>&>().try_join_next()), std::optional<int>>);
static_assert(std::is_same_v<decltype(std::declval<JoinSet<void>&>().try_join_next()),
                             std::optional<std::monostate>>);

// Calls try_join_next until it gives a task (or throws its JoinError), yielding between
// calls as an accept loop does between accepts. Gives up (nullopt) after a bounded count.
Task<std::optional<int>> reap(JoinSet<int>& set) {
  for (int tries = 0; tries < 100000; ++tries) {
    if (std::optional<int> v = set.try_join_next()) co_return v;
    co_await spool::yield_now();
  }
  ADD_FAILURE() << "try_join_next never gave the finished task";
  co_return std::nullopt;
}

Task<void> takes_only_finished_tasks() {
  JoinSet<int> set;
  std::vector<ManualLeaf> leaves(3);
  for (int i = 0; i < 3; ++i) set.spawn(value_after(leaves[i], i));
  EXPECT_EQ(set.try_join_next(), std::nullopt);  // none can have finished
  EXPECT_EQ(set.size(), 3u);

  leaves[1].fire();
  EXPECT_EQ(co_await reap(set), 1);
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(set.try_join_next(), std::nullopt);  // 0 and 2 still wait

  leaves[0].fire();
  leaves[2].fire();
  std::set<int> rest;
  for (int i = 0; i < 2; ++i) rest.insert((co_await reap(set)).value_or(-1));
  EXPECT_EQ(rest, (std::set<int>{0, 2}));
  EXPECT_TRUE(set.is_empty());
  EXPECT_EQ(set.try_join_next(), std::nullopt);
}

TEST_P(TryJoinNextAnyFlavor, TakesOnlyFinishedTasks) {
  auto rt = build();
  wait(rt, rt.spawn(takes_only_finished_tasks()));
}

// The JoinError that reaping `set` throws (a failure is recorded if it throws none).
Task<std::optional<spool::JoinError>> reap_error(JoinSet<int>& set) {
  try {
    (void)co_await reap(set);
  } catch (const spool::JoinError& e) {
    co_return e;
  }
  ADD_FAILURE() << "try_join_next should have thrown";
  co_return std::nullopt;
}

Task<void> gives_join_errors() {
  JoinSet<int> set;
  ManualLeaf fail;
  set.spawn(throw_after(fail, "task failed"));
  fail.fire();
  std::optional<spool::JoinError> failed = co_await reap_error(set);
  EXPECT_TRUE(failed && failed->is_exception());
  if (failed) {
    EXPECT_NE(std::string(failed->what()).find("threw an exception: task failed"),
              std::string::npos)
        << failed->what();
  }
  EXPECT_TRUE(set.is_empty());

  ManualLeaf never;
  set.spawn(value_after(never, 1));
  set.abort_all();
  std::optional<spool::JoinError> cancelled = co_await reap_error(set);
  EXPECT_TRUE(cancelled && cancelled->is_cancelled());
  EXPECT_TRUE(set.is_empty());
}

TEST_P(TryJoinNextAnyFlavor, GivesAFailedOrCancelledTaskAsItsJoinError) {
  auto rt = build();
  wait(rt, rt.spawn(gives_join_errors()));
}

// try_join_next runs inside a task whose cooperative budget is spent (as after a burst of
// ready awaits): a plain call cannot yield, so the budget must not make it miss the task.
Task<std::optional<int>> reap_with_spent_budget(JoinSet<int>& set) {
  std::optional<int> got;
  auto spend_then_try = spool::poll_fn([&](spool::Context& cx) -> spool::Poll<void> {
    while (spool::detail::coop_poll_proceed(cx)) {
    }
    got = set.try_join_next();
    return spool::Poll<void>::ready();
  });
  for (int tries = 0; tries < 100000 && !got; ++tries) {
    auto once = spend_then_try;  // a fresh future each time
    co_await once;
    if (!got) co_await spool::yield_now();
  }
  co_return got;
}

Task<int> reaps_with_spent_budget() {
  JoinSet<int> set;
  set.spawn(value(7));
  std::optional<int> got = co_await reap_with_spent_budget(set);
  co_return got.value_or(-1);
}

TEST_P(TryJoinNextAnyFlavor, ASpentBudgetDoesNotHideAFinishedTask) {
  auto rt = build();
  EXPECT_EQ(wait(rt, rt.spawn(reaps_with_spent_budget())), 7);
}

// try_join_next looked at the task (and took its wake-up) while it was pending: join_next
// must still be woken when it finishes.
Task<int> join_next_after_try() {
  JoinSet<int> set;
  ManualLeaf leaf;
  set.spawn(value_after(leaf, 5));
  EXPECT_EQ(set.try_join_next(), std::nullopt);
  co_await spool::yield_now();  // the task runs and waits on the leaf
  EXPECT_EQ(set.try_join_next(), std::nullopt);
  leaf.fire();
  std::optional<int> joined = co_await set.join_next();
  co_return joined.value_or(-1);
}

TEST_P(TryJoinNextAnyFlavor, JoinNextStillWakesForATaskItLookedAt) {
  auto rt = build();
  EXPECT_EQ(wait(rt, rt.spawn(join_next_after_try())), 5);
}

}  // namespace
}  // namespace spool_comb_test
