// Where a spawned task goes (DESIGN §3): spawn_on names the channel; a plain spawn from inside
// a task of the runtime inherits the spawner's channel (a high-priority task's sub-work stays
// high); a spawn from anywhere else — outside any task, the root future of block_on, a task of
// another runtime — goes to the default channel (Builder::default_channel). Each test reads a
// task's channel from Runtime::dump(), which lists "task <id> [<channel>]: ...".
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::JoinHandle;
using spool::Level;
using spool::Task;

// The channel dump() lists for the task with this id, or a note that it is not listed.
std::string channel_of(const spool::Runtime& rt, std::uint64_t id) {
  const std::string dump = "\n" + rt.dump();
  const std::string key = "\ntask " + std::to_string(id) + " [";
  std::size_t at = dump.find(key);
  if (at == std::string::npos) return "<task " + std::to_string(id) + " not in dump>" + dump;
  at += key.size();
  return dump.substr(at, dump.find(']', at) - at);
}

// A task that stays alive (for dump) until the runtime shuts down and cancels it.
Task<void> stay() { co_await spool_rt_test::NeverReady{}; }

// Spawns `stay` children with a plain spawn; records their ids.
Task<void> spawn_plain(int n, std::vector<std::uint64_t>* ids) {
  for (int i = 0; i < n; ++i) ids->push_back(spool::spawn(stay()).id());
  co_return;
}

// Spawns, with a plain spawn, a task that itself spawns with a plain spawn: both inherit.
Task<void> spawn_grandchild(std::vector<std::uint64_t>* ids) {
  co_await spool::spawn(spawn_plain(1, ids));
}

// Spawns onto `other` with the free spool::spawn_on; that task's own plain spawn inherits
// `other`, not this task's channel.
Task<void> spawn_on_other(spool::ChannelId other, std::vector<std::uint64_t>* ids) {
  co_await spool::spawn_on(other, spawn_plain(1, ids));
}

class SpawnChannelAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  spool::Runtime three_levels(spool::Builder b) const {
    return b.levels({Level{"high"}, Level{"mid-a", "mid-b"}, Level{"low-a", "low-b"}}).build();
  }
  spool::Runtime three_levels() const { return three_levels(builder()); }
};
SPOOL_RT_INSTANTIATE_FLAVORS(SpawnChannelAnyFlavor);

TEST_P(SpawnChannelAnyFlavor, APlainSpawnFromATaskGoesToTheSpawnersChannel) {
  auto rt = three_levels();
  for (const char* name : {"high", "mid-b", "low-b"}) {
    std::vector<std::uint64_t> ids;  // written by the spawner, read after it is joined
    wait(rt, rt.spawn_on(rt.channel(name), spawn_plain(3, &ids)));
    ASSERT_EQ(ids.size(), 3u);
    for (std::uint64_t id : ids) EXPECT_EQ(channel_of(rt, id), name) << "task " << id;
  }
}

TEST_P(SpawnChannelAnyFlavor, SubWorkOfSubWorkStaysOnTheChannel) {
  auto rt = three_levels();
  std::vector<std::uint64_t> ids;  // the grandchild's: written by the child, read after
  wait(rt, rt.spawn_on(rt.channel("mid-b"), spawn_grandchild(&ids)));
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(channel_of(rt, ids[0]), "mid-b");
}

TEST_P(SpawnChannelAnyFlavor, SpawnOnFromATaskNamesTheChannelAndItsSubWorkInheritsThat) {
  auto rt = three_levels();
  std::vector<std::uint64_t> ids;  // the grandchild's: written by the child, read after
  wait(rt, rt.spawn_on(rt.channel("low-b"), spawn_on_other(rt.channel("high"), &ids)));
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(channel_of(rt, ids[0]), "high");
}

TEST_P(SpawnChannelAnyFlavor, ASpawnFromOutsideAnyTaskGoesToTheDefaultChannel) {
  auto rt = three_levels();  // default: the first channel of the lowest level
  const std::uint64_t from_test_thread = rt.spawn(stay()).id();
  std::uint64_t from_other_thread = 0;
  std::thread([&, h = rt.handle()] { from_other_thread = h.spawn(stay()).id(); }).join();
  struct Root {
    // Spawns from the root future of block_on, which is not a task.
    static Task<std::uint64_t> run() { co_return spool::spawn(stay()).id(); }
  };
  const std::uint64_t from_block_on = rt.block_on(Root::run());
  EXPECT_EQ(channel_of(rt, from_test_thread), "low-a");
  EXPECT_EQ(channel_of(rt, from_other_thread), "low-a");
  EXPECT_EQ(channel_of(rt, from_block_on), "low-a");
}

TEST_P(SpawnChannelAnyFlavor, DefaultChannelSetsWhereSpawnsFromOutsideGoButNotInheritance) {
  auto rt = three_levels(builder().default_channel("mid-a"));
  const std::uint64_t outside = rt.spawn(stay()).id();
  EXPECT_EQ(channel_of(rt, outside), "mid-a");
  std::vector<std::uint64_t> ids;  // written by the spawner, read after it is joined
  wait(rt, rt.spawn_on(rt.channel("low-b"), spawn_plain(1, &ids)));
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(channel_of(rt, ids[0]), "low-b");
}

// Spawns onto another runtime's handle from inside a task of this one.
Task<std::uint64_t> spawn_onto(spool::Handle other) { co_return other.spawn(stay()).id(); }

TEST_P(SpawnChannelAnyFlavor, ASpawnOntoAnotherRuntimeFromATaskGoesToThatRuntimesDefault) {
  // The spawner's channel has index 0 in its runtime; the other runtime's default has
  // index 2 (and its index 0 exists too): inheriting the index would show "b0".
  auto a = builder().levels({Level{"a-top"}, Level{"a-bottom"}}).build();
  auto b = builder().levels({Level{"b0"}, Level{"b1"}, Level{"b2"}}).build();
  const std::uint64_t id = wait(a, a.spawn_on(a.channel("a-top"), spawn_onto(b.handle())));
  EXPECT_EQ(channel_of(b, id), "b2");

  auto c = builder().levels({Level{"c0"}, Level{"c1"}, Level{"c2"}}).default_channel("c1").build();
  const std::uint64_t id2 = wait(a, a.spawn_on(a.channel("a-top"), spawn_onto(c.handle())));
  EXPECT_EQ(channel_of(c, id2), "c1");
}

}  // namespace
