// JoinSet: join_next in finish order, nullopt when empty, a task's exception or cancellation
// as JoinError, abort_all, destroying the set aborts what is left, slots reused and more
// than 64 tasks; on both runtime flavours, and from a plain thread with spawn_on.
#include <gtest/gtest.h>

#include <cstdint>
#include <latch>
#include <optional>
#include <stdexcept>
#include <thread>
#include <variant>
#include <vector>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"
#include "support/rt_flavor.hpp"

namespace spool_comb_test {
namespace {

class JoinSetAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(JoinSetAnyFlavor);

// Spawns three tasks, fires their leaves in the order 2, 0, 1 (one at a time, joining each
// before the next fire) and records the order join_next gave them in.
Task<std::vector<int>> join_in_fire_order() {
  JoinSet<int> set;
  std::vector<ManualLeaf> leaves(3);
  for (int i = 0; i < 3; ++i) set.spawn(value_after(leaves[i], i));
  std::vector<int> order;
  for (int i : {2, 0, 1}) {
    leaves[i].fire();
    std::optional<int> joined = co_await set.join_next();
    order.push_back(joined.value());
  }
  order.push_back(set.is_empty() ? -1 : -2);
  std::optional<int> none = co_await set.join_next();
  order.push_back(none.has_value() ? -2 : -1);
  co_return order;
}

TEST_P(JoinSetAnyFlavor, JoinsInTheOrderTheTasksFinish) {
  auto rt = build();
  EXPECT_EQ(rt.block_on(join_in_fire_order()), (std::vector<int>{2, 0, 1, -1, -1}));
}

Task<std::int64_t> join_many(int n) {
  JoinSet<int> set;
  for (int i = 0; i < n; ++i) set.spawn(value(i));
  std::int64_t sum = 0;
  std::size_t joined = 0;
  while (std::optional<int> v = co_await set.join_next()) {
    sum += *v;
    ++joined;
  }
  // The slots are reused: the set grows no further for a second round.
  for (int i = 0; i < n; ++i) set.spawn(value(i));
  while (std::optional<int> v = co_await set.join_next()) sum += *v;
  co_return joined == static_cast<std::size_t>(n) ? sum : -1;
}

TEST_P(JoinSetAnyFlavor, JoinsMoreThanOneChunkOfTasks) {
  auto rt = build();
  EXPECT_EQ(rt.block_on(join_many(200)), 2 * (199 * 200 / 2));
}

Task<void> exception_and_cancellation() {
  JoinSet<int> set;
  ManualLeaf fail;
  set.spawn(spool_comb_test::throw_after(fail, "task failed"));
  fail.fire();
  try {
    (void)co_await set.join_next();
    ADD_FAILURE() << "join_next should have thrown";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_exception());
    EXPECT_THROW(std::rethrow_exception(e.exception()), std::runtime_error);
  }
  EXPECT_TRUE(set.is_empty());

  std::latch dropped(2);
  set.spawn(pending_forever(LatchOnDrop(dropped)));
  set.spawn(pending_forever(LatchOnDrop(dropped)));
  EXPECT_EQ(set.size(), 2u);
  set.abort_all();
  EXPECT_EQ(set.size(), 2u);  // aborted tasks stay until joined
  for (int i = 0; i < 2; ++i) {
    try {
      (void)co_await set.join_next();
      ADD_FAILURE() << "join_next should have thrown";
    } catch (const spool::JoinError& e) {
      EXPECT_TRUE(e.is_cancelled());
    }
  }
  EXPECT_TRUE(set.is_empty());
  EXPECT_TRUE(dropped.try_wait());  // both frames were destroyed by the cancellation
}

TEST_P(JoinSetAnyFlavor, ExceptionsAndCancellationSurfaceAsJoinError) {
  auto rt = build();
  rt.block_on(exception_and_cancellation());
}

// Fills a set with tasks that never finish, lets them start, then drops the set.
Task<void> spawn_then_drop_set(std::latch* dropped) {
  JoinSet<int> set;
  for (int i = 0; i < 3; ++i) set.spawn(pending_forever(LatchOnDrop(*dropped)));
  co_await spool::yield_now();
}

TEST_P(JoinSetAnyFlavor, DestroyingTheSetAbortsItsTasks) {
  auto rt = build();
  std::latch dropped(3);
  rt.block_on(spawn_then_drop_set(&dropped));
  until_done(rt, dropped);
  EXPECT_TRUE(dropped.try_wait());
}

Task<void> nothing() { co_return; }

Task<int> join_void_tasks() {
  JoinSet<void> set;
  set.spawn(nothing());
  std::optional<std::monostate> joined = co_await set.join_next();
  co_return joined.has_value() ? 1 : 0;
}

TEST_P(JoinSetAnyFlavor, AVoidSetJoinsMonostate) {
  auto rt = build();
  EXPECT_EQ(rt.block_on(join_void_tasks()), 1);
}

// A plain thread fills a set with spawn_with and joins it with spool::block_on, while leaves
// are fired from another thread.
TEST(JoinSetPlainThread, SpawnWithAndJoinFromOutsideTheRuntime) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  JoinSet<int> set;
  std::vector<ManualLeaf> leaves(4);
  for (int i = 0; i < 4; ++i) set.spawn_with(rt.handle(), value_after(leaves[i], i + 1));
  std::thread firer([&leaves] {
    for (auto& leaf : leaves) leaf.fire();
  });
  int sum = 0;
  while (std::optional<int> v = spool::block_on(set.join_next())) sum += *v;
  firer.join();
  EXPECT_EQ(sum, 10);
}

Task<int> value_three() { co_return 3; }

// Fills a set with two tasks spawned onto `channel` and joins them.
Task<int> join_on_channel(spool::ChannelId channel) {
  JoinSet<int> set;
  set.spawn_on(channel, value_three());
  set.spawn_on(channel, value_three());
  int sum = 0;
  while (std::optional<int> v = co_await set.join_next()) sum += *v;
  co_return sum;
}

TEST(JoinSetChannels, SpawnOnPutsTheTaskOnThatChannel) {
  auto rt = spool::Builder::current_thread().levels({spool::Level{"main", "set"}}).build();
  EXPECT_EQ(rt.block_on(join_on_channel(rt.channel("set"))), 6);
  for (const spool::ChannelMetrics& c : rt.metrics().channels) {
    EXPECT_EQ(c.polled, c.name == "set" ? 2u : 0u) << c.name;
  }
}

TEST(JoinSetPlainThread, SpawnOutsideARuntimeThrows) {
  JoinSet<int> set;
  EXPECT_THROW(set.spawn(value(1)), std::logic_error);
  EXPECT_TRUE(set.is_empty());
}

}  // namespace
}  // namespace spool_comb_test
