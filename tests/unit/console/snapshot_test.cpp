// The console's snapshot protocol (docs/console.md): a runtime with known tasks serialised and
// compared to a golden text (volatile fields normalised); the reader takes back what the writer
// wrote, optional fields included; malformed lines and other versions are refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "console/json.hpp"
#include "console/sample.hpp"
#include "console/snapshot.hpp"
#include "spool/spool.hpp"

namespace {

using spool::console::Snapshot;

const char* const kGolden = SPOOL_CONSOLE_GOLDEN_DIR "/golden_snapshot.json";

// Yields `n` times, then says so and waits on `rx` (never sent: it stays live).
spool::Task<void> yields_then_waits(int n, spool::oneshot::Sender<int> done,
                                    spool::oneshot::Receiver<int> rx) {
  for (int i = 0; i < n; ++i) co_await spool::yield_now();
  done.send(0);
  (void)co_await std::move(rx);
}

spool::Task<void> waits(spool::oneshot::Receiver<int> rx) { (void)co_await std::move(rx); }

// Replaces what changes from run to run: the pid, busy times and shares, task ids (by
// their order: the snapshot lists tasks by id), and the backtraces' sites (a path of this
// checkout, a function named as each compiler likes; clang 14 records none): each frame stays.
std::string normalise(std::string text) {
  text = std::regex_replace(text, std::regex(R"(\{"file":"[^"]*","line":\d+,"function":"[^"]*"\})"),
                            R"({"file":"F","line":0,"function":"f"})");
  text = std::regex_replace(text, std::regex(R"("pid":\d+)"), R"("pid":0)");
  text = std::regex_replace(text, std::regex(R"("busy_ns":\d+)"), R"("busy_ns":0)");
  text = std::regex_replace(text, std::regex(R"("share":[0-9.e+-]+)"), R"("share":0.5)");
  std::map<std::string, int> ids;
  std::smatch m;
  const std::regex id(R"("id":(\d+))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), id); it != std::sregex_iterator();
       ++it) {
    ids.try_emplace((*it)[1], static_cast<int>(ids.size()) + 1);
  }
  for (const auto& [from, to] : ids) {
    text = std::regex_replace(text, std::regex("\"(id|task)\":" + from + "([,}])"),
                              "\"$1\":" + std::to_string(to) + "$2");
    text =
        std::regex_replace(text, std::regex("task " + from + "\\b"), "task " + std::to_string(to));
  }
  // One array element per line, so a mismatch diffs readably.
  text = std::regex_replace(text, std::regex(R"(\},\{)"), "},\n{");
  return text + "\n";
}

TEST(ConsoleSnapshot, GoldenOfARuntimeWithKnownTasks) {
  spool::Runtime rt = spool::Builder::current_thread()
                          .levels({spool::Level{spool::Channel("ui")},
                                   spool::Level{spool::Channel("batch").complete_on_close()}})
                          .build();
  std::vector<spool::oneshot::Sender<int>> keep;
  auto rx_for_test = [&] {
    auto [tx, rx] = spool::oneshot::channel<int>();
    keep.push_back(std::move(tx));
    return std::move(rx);
  };
  auto [done_tx, done_rx] = spool::oneshot::channel<int>();
  (void)rt.spawn_on(rt.channel("ui"), spool::named("conn 127.0.0.1:5412", waits(rx_for_test())),
                    spool::SpawnLocation{"app/server.cpp", 41});
  (void)rt.spawn_on(
      rt.channel("batch"),
      spool::named("spinner", yields_then_waits(150, std::move(done_tx), rx_for_test())),
      spool::SpawnLocation{"app/batch.cpp", 7});
  (void)rt.spawn_on(rt.channel("batch"), waits(rx_for_test()),
                    spool::SpawnLocation{"app/batch.cpp", 9});
  rt.block_on([](spool::oneshot::Receiver<int> rx) -> spool::Task<void> {
    (void)co_await std::move(rx);
  }(std::move(done_rx)));

  spool::console::SnapshotMaker maker(
      spool::console::RuntimeFacts{"current_thread", {{false, false}, {true, false}}});
  const Snapshot s = maker.make(rt.metrics(), rt.tasks(), std::chrono::milliseconds(1234));
  const std::string got = normalise(spool::console::to_json(s));

  if (std::getenv("SPOOL_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(kGolden) << got;
    GTEST_SKIP() << "wrote " << kGolden;
  }
  std::ifstream in(kGolden);
  ASSERT_TRUE(in) << "no golden file " << kGolden << " (SPOOL_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "SPOOL_UPDATE_GOLDEN=1 rewrites the golden file; check its diff";
}

Snapshot full_snapshot() {
  Snapshot s;
  s.seq = 3;
  s.runtime.flavor = "multi_thread";
  s.runtime.dropped_snapshots = 2;
  s.workers.push_back({10, 2, 3, 1, "in_driver"});
  s.levels.push_back({1, 2, 3, 0, 0.25});
  s.channels.push_back({"ui \"quoted\"\n", 0, "edf", true, 1, 2, 3, 4, std::nullopt});
  spool::console::TaskInfo t;
  t.id = 7;
  t.name = "caf\xc3\xa9";
  t.state = "idle";
  t.busy_ns = 5;
  t.longest_poll_ns = 20'000'000;
  t.poll_histogram = std::vector<std::uint64_t>(21, 0);
  (*t.poll_histogram)[3] = 9;
  t.wakers = 1;
  t.waker_clones = 4;
  t.waker_drops = 3;
  t.waiting_on = "spool::Sleep";
  t.backtrace = std::vector<spool::console::FrameInfo>{{"a.cpp", 3, "f()"}, {"b.cpp", 4, "g()"}};
  spool::console::BranchInfo inner{0, std::nullopt, {}, std::nullopt, 5};
  t.branches =
      std::vector<spool::console::BranchInfo>{{2,
                                               "spool::Sleep",
                                               {{"c.cpp", 5, "h()"}},
                                               std::vector<spool::console::BranchInfo>{inner},
                                               std::nullopt}};
  s.tasks.push_back(t);
  s.lints.push_back({"long_poll", 7, std::nullopt, "slow"});
  return s;
}

// A level's and a channel's share is its part of the busy time that grew since the previous
// snapshot (of this maker, that is of this subscriber); absent when none grew.
TEST(ConsoleSnapshot, SharesAreEachPartOfTheBusyTimeSinceThePreviousSnapshot) {
  using std::chrono::milliseconds;
  spool::console::SnapshotMaker maker(
      spool::console::RuntimeFacts{"multi_thread", {{false, false}, {false, false}}});
  spool::RuntimeMetrics m;
  m.levels.resize(2);
  m.channels.resize(2);
  m.channels[1].level = 1;
  auto busy = [&](milliseconds high, milliseconds low) {
    m.levels[0].busy_time = m.channels[0].busy_time = high;
    m.levels[1].busy_time = m.channels[1].busy_time = low;
    return maker.make(m, {}, milliseconds(0));
  };
  Snapshot s = busy(milliseconds(30), milliseconds(10));  // from nothing: 30 and 10 of 40
  ASSERT_TRUE(s.levels[0].share && s.channels[1].share);
  EXPECT_DOUBLE_EQ(*s.levels[0].share, 0.75);
  EXPECT_DOUBLE_EQ(*s.channels[0].share, 0.75);
  EXPECT_DOUBLE_EQ(*s.levels[1].share, 0.25);
  EXPECT_DOUBLE_EQ(*s.channels[1].share, 0.25);
  s = busy(milliseconds(40), milliseconds(40));  // grew by 10 and 30
  ASSERT_TRUE(s.levels[0].share && s.channels[1].share);
  EXPECT_DOUBLE_EQ(*s.levels[0].share, 0.25);
  EXPECT_DOUBLE_EQ(*s.channels[1].share, 0.75);
  s = busy(milliseconds(40), milliseconds(40));  // idle since: no share to show
  EXPECT_FALSE(s.levels[0].share.has_value());
  EXPECT_FALSE(s.channels[1].share.has_value());
}

TEST(ConsoleSnapshot, ReaderTakesBackWhatTheWriterWrote) {
  const Snapshot s = full_snapshot();
  const std::string line = spool::console::to_json(s);
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one snapshot is one line";
  const Snapshot back = spool::console::snapshot_from_json(line);
  EXPECT_EQ(spool::console::to_json(back), line);
  ASSERT_EQ(back.tasks.size(), 1u);
  EXPECT_EQ(back.tasks[0].name, "caf\xc3\xa9");
  ASSERT_TRUE(back.tasks[0].backtrace.has_value());
  EXPECT_EQ((*back.tasks[0].backtrace)[1].function, "g()");
  ASSERT_TRUE(back.tasks[0].branches.has_value());
  const spool::console::BranchInfo& branch = (*back.tasks[0].branches)[0];
  EXPECT_EQ(branch.index, 2u);
  EXPECT_EQ(branch.waiting_on, "spool::Sleep");
  EXPECT_EQ(branch.backtrace[0].file, "c.cpp");
  ASSERT_TRUE(branch.branches.has_value());
  EXPECT_FALSE((*branch.branches)[0].waiting_on.has_value());
  EXPECT_EQ((*branch.branches)[0].omitted_branches, 5u);
  ASSERT_TRUE(back.tasks[0].poll_histogram.has_value());
  EXPECT_EQ((*back.tasks[0].poll_histogram)[3], 9u);
  EXPECT_EQ(back.workers[0].state, "in_driver");
  EXPECT_EQ(back.channels[0].name, "ui \"quoted\"\n");
  EXPECT_FALSE(back.channels[0].share.has_value()) << "absent means not measured";
  EXPECT_FALSE(back.tasks[0].idle_ns.has_value());
}

// A backtrace's branches nested deeper than the protocol carries are left out, so that the
// client's reader (which bounds nesting) still takes the line.
TEST(ConsoleSnapshot, DeeplyNestedBranchesAreCutAndTheLineStillReads) {
  spool::TaskSnapshot t;
  t.backtrace.emplace();
  spool::Backtrace* at = &*t.backtrace;
  for (int i = 0; i < 40; ++i) at = &at->branches.emplace_back().backtrace;
  Snapshot s;
  s.tasks.push_back(spool::console::task_info(t));
  int depth = 0;
  const spool::console::BranchInfo* deepest = nullptr;
  for (const auto* b = &s.tasks[0].branches; *b; b = &(**b)[0].branches) {
    ++depth;
    deepest = &(**b)[0];
  }
  EXPECT_EQ(depth, 16);
  ASSERT_NE(deepest, nullptr);
  EXPECT_EQ(deepest->omitted_branches, 1u) << "the cut says what it left out";
  EXPECT_NO_THROW(spool::console::snapshot_from_json(spool::console::to_json(s)));
}

TEST(ConsoleSnapshot, AbsentOptionalFieldsAreNotWritten) {
  Snapshot s;
  s.tasks.emplace_back();
  const std::string line = spool::console::to_json(s);
  for (const char* name :
       {"busy_ns", "scheduled_ns", "idle_ns", "longest_poll_ns", "poll_histogram", "wakers",
        "waker_clones", "waker_drops", "backtrace", "waiting_on", "branches", "omitted_branches"}) {
    EXPECT_EQ(line.find(name), std::string::npos) << name;
  }
  // A line without them (a runtime older than some of them) reads.
  EXPECT_EQ(spool::console::snapshot_from_json(line).tasks.at(0).waker_clones, std::nullopt);
}

TEST(ConsoleSnapshot, RefusesAnotherVersionAndMalformedLines) {
  std::string line = spool::console::to_json(full_snapshot());
  std::string v2 = std::regex_replace(line, std::regex(R"(^\{"v":1)"), R"({"v":2)");
  EXPECT_THROW(spool::console::snapshot_from_json(v2), std::invalid_argument);
  EXPECT_THROW(spool::console::snapshot_from_json(line.substr(0, line.size() / 2)),
               std::invalid_argument);
  EXPECT_THROW(spool::console::snapshot_from_json(R"({"v":1})"), std::invalid_argument);
  EXPECT_THROW(spool::console::parse_json(std::string(100, '[') + std::string(100, ']')),
               std::invalid_argument)
      << "nesting is bounded";
}

TEST(ConsoleJson, ParsesEscapesAndNumbers) {
  const auto v =
      spool::console::parse_json(R"( {"a":[1,-2,0.5,true,null],"s":"\u00e9\ud83d\ude00\t"} )");
  const auto* a = v.find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->array.size(), 5u);
  EXPECT_EQ(a->array[1].integer, -2);
  EXPECT_TRUE(a->array[1].is_integer);
  EXPECT_FALSE(a->array[2].is_integer);
  EXPECT_DOUBLE_EQ(a->array[2].number, 0.5);
  EXPECT_TRUE(a->array[4].is_null());
  EXPECT_EQ(v.find("s")->string, "\xc3\xa9\xf0\x9f\x98\x80\t");
}

}  // namespace
