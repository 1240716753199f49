// Task names (spool::named) and spawn locations: every spawn function records its caller's
// file and line and a named future's name, and Runtime::dump() prints both.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <latch>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Task;
using spool_rt_test::ManualLeaf;

using spool_rt_test::await_leaf;
using spool_rt_test::value;

// This file's name as the spawn functions record it.
const char* const kThisFile = __builtin_FILE();

// The dump line of task `id` (empty if there is none).
std::string dump_line(const std::string& dump, std::uint64_t id) {
  const std::string start = "task " + std::to_string(id) + " ";
  std::size_t pos = dump.rfind("\n" + start);
  if (pos == std::string::npos) {
    if (dump.rfind(start, 0) != 0) return {};
    pos = 0;
  } else {
    ++pos;
  }
  return dump.substr(pos, dump.find('\n', pos) - pos);
}

// Appended piece by piece: g++ 12 at -O1 (the tsan preset) warns falsely (-Warray-bounds)
// on a chain of operator+ here.
std::string at(int line) {
  std::string s = ", spawned at ";
  s.append(kThisFile).append(":").append(std::to_string(line));
  return s;
}

TEST(TaskName, ALiteralNameAndTheSpawnLineShowInTheDump) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf leaf;
  const int line = __LINE__ + 1;
  auto h = rt.spawn(spool::named("conn", await_leaf(leaf)));
  const std::string l = dump_line(rt.dump(), h.id());
  EXPECT_EQ(
      l.rfind("task " + std::to_string(h.id()) + " \"conn\" [default]: scheduled, 0 poll(s)", 0),
      0u)
      << l;
  EXPECT_NE(l.find(at(line)), std::string::npos) << l;
  leaf.fire();
  rt.block_on(h);
}

TEST(TaskName, ADynamicNameIsCopied) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf leaf;
  std::string name = "peer " + std::to_string(5412) + " with a name longer than SSO";
  auto h = rt.spawn(spool::named(name, await_leaf(leaf)));
  name.assign(name.size(), 'x');  // the task holds a copy, not this string
  const std::string l = dump_line(rt.dump(), h.id());
  EXPECT_NE(l.find("\"peer 5412 with a name longer than SSO\""), std::string::npos) << l;
  leaf.fire();
  rt.block_on(h);
}

TEST(TaskName, AConstCharPointerIsCopiedAndAStringViewToo) {
  auto rt = spool::Builder::current_thread().build();
  std::string text = "from a pointer";
  const char* p = text.c_str();
  auto a = rt.spawn(spool::named(p, value(1)));
  auto b = rt.spawn(spool::named(std::string_view(text).substr(0, 4), value(2)));
  text.assign(text.size(), 'x');
  const std::string dump = rt.dump();
  EXPECT_NE(dump_line(dump, a.id()).find("\"from a pointer\""), std::string::npos) << dump;
  EXPECT_NE(dump_line(dump, b.id()).find("\"from\""), std::string::npos) << dump;
  EXPECT_EQ(rt.block_on(a) + rt.block_on(b), 3);
}

TEST(TaskName, AnUnnamedTaskShowsItsSpawnLineOnly) {
  auto rt = spool::Builder::current_thread().build();
  const int line = __LINE__ + 1;
  auto h = rt.spawn(value(7));
  const std::string l = dump_line(rt.dump(), h.id());
  EXPECT_EQ(l.rfind("task " + std::to_string(h.id()) + " [default]: ", 0), 0u) << l;
  EXPECT_NE(l.find(at(line)), std::string::npos) << l;
  EXPECT_EQ(rt.block_on(h), 7);
}

TEST(TaskName, ANamedFutureGivesItsOutputAndCanBeAwaitedDirectly) {
  auto rt = spool::Builder::current_thread().build();
  EXPECT_EQ(rt.block_on(rt.spawn(spool::named("v", value(3)))), 3);
  EXPECT_EQ(rt.block_on(spool::named("direct", value(4))), 4);
  auto outer = []() -> Task<int> { co_return co_await spool::named("in", value(5)); };
  EXPECT_EQ(rt.block_on(outer()), 5);
}

// Each spawn function records the line of its own caller, not one inside spool.
TEST(TaskName, EverySpawnFunctionRecordsItsCaller) {
  auto rt = spool::Builder::current_thread().build();
  const spool::ChannelId ch = rt.channel("default");
  std::vector<std::pair<std::uint64_t, int>> spawned;
  spool::TaskTracker tracker;
  rt.block_on([&]() -> Task<void> {
    int line = __LINE__ + 1;
    auto a = spool::spawn(value(1));
    spawned.emplace_back(a.id(), line);
    line = __LINE__ + 1;
    auto b = spool::spawn_on(ch, value(2));
    spawned.emplace_back(b.id(), line);
    line = __LINE__ + 1;
    auto c = spool::Handle::current().spawn(value(3));
    spawned.emplace_back(c.id(), line);
    line = __LINE__ + 1;
    auto d = rt.spawn_on(ch, value(4));
    spawned.emplace_back(d.id(), line);
    line = __LINE__ + 1;
    auto e = tracker.spawn(spool::named("tracked", value(5)));
    spawned.emplace_back(e.id(), line);
    line = __LINE__ + 1;
    auto f = spool::spawn_after(ch, std::chrono::hours(1), spool::named("later", value(6)));
    spawned.emplace_back(f.id(), line);
    const std::string dump = rt.dump();
    for (auto [id, l] : spawned) {
      EXPECT_NE(dump_line(dump, id).find(at(l)), std::string::npos) << "line " << l << "\n" << dump;
    }
    EXPECT_NE(dump_line(dump, e.id()).find("\"tracked\""), std::string::npos) << dump;
    EXPECT_NE(dump_line(dump, f.id()).find("\"later\""), std::string::npos) << dump;
    EXPECT_EQ(co_await a + co_await b + co_await c + co_await d + co_await e, 15);
    f.abort();
    co_return;
  }());
}

TEST(TaskName, SpawnBlockingAndJoinSetRecordTheirCallers) {
  auto rt = spool::Builder::current_thread().build();
  std::latch release(1);
  const int blocking_line = __LINE__ + 1;
  auto h = rt.spawn_blocking([&release] { release.wait(); });
  ManualLeaf leaf;
  spool::JoinSet<void> set;
  int set_line = 0;
  rt.block_on([&]() -> Task<void> {
    set_line = __LINE__ + 1;
    set.spawn(spool::named("member", await_leaf(leaf)));
    co_return;
  }());
  const std::string dump = rt.dump();
  EXPECT_NE(dump_line(dump, h.id()).find(at(blocking_line)), std::string::npos) << dump;
  EXPECT_NE(dump.find("\"member\" [default]: scheduled, 0 poll(s)" + at(set_line)),
            std::string::npos)
      << dump;
  release.count_down();
  leaf.fire();
  rt.block_on(h);
  rt.block_on([&]() -> Task<void> { (void)co_await set.join_next(); }());
}

TEST(TaskName, AScopeChildRecordsItsNameAndCaller) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf leaf;
  int line = 0;
  std::string dump;
  rt.block_on(spool::scope([&](spool::Scope& s) -> Task<void> {
    line = __LINE__ + 1;
    s.spawn(spool::named("child", await_leaf(leaf)));
    dump = rt.dump();
    leaf.fire();
    co_return;
  }));
  EXPECT_NE(dump.find("\"child\" [default]: scheduled, 0 poll(s)" + at(line)), std::string::npos)
      << dump;
}

}  // namespace
