// spool-console's views and keys (tools/spool-console): sorting, the details view and back,
// a task that finished, lines cut to the screen's width, control characters neutralised.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "render.hpp"
#include "ui.hpp"

namespace {

using spool::console::Snapshot;
using spool::console::TaskInfo;
using spool_console::SortKey;
using spool_console::Ui;

Snapshot three_tasks() {
  Snapshot s;
  s.runtime.flavor = "multi_thread";
  for (std::uint64_t id : {1, 2, 3}) {
    TaskInfo t;
    t.id = id;
    t.name = "task-" + std::to_string(id);
    t.channel = "default";
    t.state = "idle";
    t.polls = id == 2 ? 100 : id;  // task 2 the busiest
    t.wakes = 10 - id;             // task 1 woken most
    s.tasks.push_back(t);
  }
  return s;
}

// The line of the frame that contains `text`, or "".
std::string find_line(const std::vector<std::string>& frame, const std::string& text) {
  for (const auto& l : frame) {
    if (l.find(text) != std::string::npos) return l;
  }
  return "";
}

TEST(ConsoleClient, SortKeysByNameAndOrder) {
  EXPECT_EQ(spool_console::sort_key("self_wakes"), SortKey::kSelfWakes);
  EXPECT_THROW(spool_console::sort_key("nonsense"), std::invalid_argument);
  EXPECT_EQ(spool_console::next_sort_key(SortKey::kIdle), SortKey::kId) << "wraps";
  const Snapshot s = three_tasks();
  EXPECT_EQ(spool_console::sorted_tasks(s, SortKey::kPolls, false)[0]->id, 2u) << "largest first";
  EXPECT_EQ(spool_console::sorted_tasks(s, SortKey::kWakes, false)[0]->id, 1u);
  EXPECT_EQ(spool_console::sorted_tasks(s, SortKey::kName, false)[0]->id, 1u) << "A to Z";
  EXPECT_EQ(spool_console::sorted_tasks(s, SortKey::kName, true)[0]->id, 3u);
}

TEST(ConsoleClient, EnterShowsTheSelectedTaskAndBackReturns) {
  Ui ui("sock", SortKey::kPolls, false);
  ui.update(three_tasks());
  // The first row (by polls: task 2) is selected and shown in inverse video.
  EXPECT_NE(find_line(ui.frame(200, 40), "task-2").find("\x1b[7m"), std::string::npos);
  ASSERT_TRUE(ui.keys("j"));  // down: the next row
  ASSERT_TRUE(ui.keys("\r"));
  EXPECT_EQ(ui.view(), Ui::View::kDetails);
  EXPECT_NE(find_line(ui.frame(200, 40), "task 3 \"task-3\""), "");
  EXPECT_NE(find_line(ui.frame(200, 40), "(not measured by this runtime)"), "");
  Snapshot running = three_tasks();  // a running task's chain is not read: it says why
  running.tasks[2].state = "running";
  ui.update(running);
  EXPECT_NE(find_line(ui.frame(200, 40), "(read while the task is idle; it is running)"), "");
  Snapshot gone = three_tasks();
  gone.tasks.pop_back();
  ui.update(gone);
  EXPECT_NE(find_line(ui.frame(200, 40), "task 3 has finished"), "");
  ASSERT_TRUE(ui.keys("b"));
  EXPECT_EQ(ui.view(), Ui::View::kTasks);
  ASSERT_TRUE(ui.keys("s"));
  EXPECT_NE(find_line(ui.frame(200, 40), "sort: wakes"), "");
  EXPECT_FALSE(ui.keys("q")) << "q quits";
}

TEST(ConsoleClient, FrameFitsTheScreen) {
  Ui ui("sock", SortKey::kId, false);
  Snapshot s = three_tasks();
  // Appended, not built with operator+ (g++ 12 at -O1 warns, wrongly, of an out-of-bounds
  // memcpy in the concatenation of temporaries).
  std::string message(300, 'x');
  message.append(" yyyyyyyyyy");
  s.lints.push_back({"self_wake", 1, std::nullopt, message});
  ui.update(s);
  const auto frame = ui.frame(40, 5);
  EXPECT_LE(frame.size(), 5u);
  ASSERT_TRUE(ui.keys("l"));
  for (const auto& l : ui.frame(40, 20)) {
    std::string visible = l;
    for (const char* attr : {"\x1b[1m", "\x1b[7m", "\x1b[0m"}) {
      for (std::size_t at; (at = visible.find(attr)) != std::string::npos;) visible.erase(at, 4);
    }
    EXPECT_LE(visible.size(), 40u) << l;
  }
  EXPECT_NE(find_line(ui.frame(40, 20), "yyyyyyyyyy"), "") << "a long lint wraps";
}

TEST(ConsoleClient, ControlCharactersCannotDriveTheTerminal) {
  Snapshot s = three_tasks();
  s.tasks[0].name = "evil\x1b]0;owned\x07";
  spool_console::make_printable(s);
  EXPECT_EQ(s.tasks[0].name, "evil?]0;owned?");
}

// A task waiting on a combinator: each branch under its own line, its frames indented, as
// Backtrace::to_string writes them; a branch's strings are cleaned too.
TEST(ConsoleClient, DetailsIndentEachBranchOfTheBacktrace) {
  using spool::console::BranchInfo;
  Snapshot s = three_tasks();
  TaskInfo& t = s.tasks[0];
  t.backtrace = std::vector<spool::console::FrameInfo>{{"a.cpp", 3, "f()"}};
  BranchInfo inner{0, std::nullopt, {{"c.cpp", 9, "h()"}}, std::nullopt, 3};
  BranchInfo branch{
      1, "Leaf\x1b[2J", {{"b.cpp", 7, "g()"}}, std::vector<BranchInfo>{inner}, std::nullopt};
  t.branches = std::vector<BranchInfo>{branch};
  spool_console::make_printable(s);
  const std::vector<std::string> lines = spool_console::task_details(t);
  const auto at = std::find(lines.begin(), lines.end(), "  backtrace:");
  ASSERT_NE(at, lines.end());
  ASSERT_GE(lines.end() - at, 7);
  EXPECT_EQ(at[1], "    at a.cpp:3 in f()");
  EXPECT_EQ(at[2], "    branch 1, waiting on Leaf?[2J:");
  EXPECT_EQ(at[3], "      at b.cpp:7 in g()");
  EXPECT_EQ(at[4], "      branch 0:");
  EXPECT_EQ(at[5], "        at c.cpp:9 in h()");
  EXPECT_EQ(at[6], "        (3 more branches not listed)");
}

// The wakers line: live, made and dropped for an idle task; only the made count otherwise;
// the live count alone from a runtime older than the made and dropped counts.
TEST(ConsoleClient, DetailsCountTheWakersMadeAndDropped) {
  Snapshot s = three_tasks();
  TaskInfo& t = s.tasks[0];
  const auto line = [&] {
    const std::vector<std::string> lines = spool_console::task_details(t);
    const auto at = std::find_if(lines.begin(), lines.end(),
                                 [](const std::string& l) { return l.starts_with("  wakers"); });
    return at == lines.end() ? std::string() : *at;
  };
  t.wakers = 2;
  EXPECT_EQ(line(), "  wakers         2 live");
  t.wakers.reset();
  t.waker_clones = 5;
  EXPECT_EQ(line(), "  wakers         - (5 made)");
  t.wakers = 1;
  t.waker_drops = 4;
  EXPECT_EQ(line(), "  wakers         1 live (5 made, 4 dropped)");
}

TEST(ConsoleClient, OptionalColumnsOnlyWhenMeasured) {
  Snapshot s = three_tasks();
  const auto plain =
      spool_console::tasks_table(s, spool_console::sorted_tasks(s, SortKey::kId, false));
  EXPECT_EQ(plain[0].find("BUSY"), std::string::npos);
  s.tasks[0].busy_ns = 1'500'000;
  const auto busy =
      spool_console::tasks_table(s, spool_console::sorted_tasks(s, SortKey::kId, false));
  EXPECT_NE(busy[0].find("BUSY"), std::string::npos);
  EXPECT_NE(busy[1].find("1.5 ms"), std::string::npos);
  EXPECT_NE(busy[2].find(" - "), std::string::npos) << "an unmeasured task shows -";
}

TEST(ConsoleClient, DetailsDrawThePollHistogramFromItsFirstToItsLastBucket) {
  Snapshot s = three_tasks();
  s.tasks[0].poll_histogram = std::vector<std::uint64_t>(21, 0);
  (*s.tasks[0].poll_histogram)[1] = 10;  // 1-2 us
  (*s.tasks[0].poll_histogram)[3] = 5;   // 4-8 us
  const std::vector<std::string> lines = spool_console::task_details(s.tasks[0]);
  const auto at = std::find(lines.begin(), lines.end(), "  poll times:");
  ASSERT_NE(at, lines.end());
  ASSERT_GE(lines.end() - at, 5);
  EXPECT_NE(at[1].find("< 2.0 us " + std::string(40, '#') + " 10"), std::string::npos) << at[1];
  EXPECT_NE(at[2].find("< 4.1 us  0"), std::string::npos) << at[2];
  EXPECT_NE(at[3].find("< 8.2 us " + std::string(20, '#') + " 5"), std::string::npos) << at[3];
  EXPECT_EQ(at[4].find("us"), std::string::npos) << "nothing after the last counted bucket";
}

// The channels view draws each share as a bar of `width` cells and a percentage, under its
// level; a share not measured is a dash.
TEST(ConsoleClient, ChannelsShowTheirShareAsBars) {
  Snapshot s;
  s.levels.push_back({});
  s.levels.push_back({});
  s.levels[0].share = 0.75;
  s.levels[1].share = 0.25;
  s.channels.push_back({});
  s.channels[0].name = "ui";
  s.channels[0].share = 0.75;
  s.channels.push_back({});
  s.channels[1].name = "batch";
  s.channels[1].level = 1;
  s.channels[1].complete_on_close = true;
  const std::vector<std::string> rows = spool_console::channels_table(s, 20);
  ASSERT_EQ(rows.size(), 5u);  // the header, then each level with its channels
  EXPECT_NE(rows[1].find("level 0"), std::string::npos) << rows[1];
  EXPECT_NE(rows[1].find("###############.....  75%"), std::string::npos) << rows[1];
  EXPECT_NE(rows[2].find("  ui"), std::string::npos) << rows[2];
  EXPECT_NE(rows[2].find("###############.....  75%"), std::string::npos) << rows[2];
  EXPECT_NE(rows[3].find("#####...............  25%"), std::string::npos) << rows[3];
  EXPECT_NE(rows[4].find("  batch (drain)"), std::string::npos) << rows[4];
  EXPECT_NE(rows[4].find("    -"), std::string::npos) << "not measured: " << rows[4];
}

TEST(ConsoleClient, WorkersShowWhatEachDoes) {
  Snapshot s = three_tasks();
  s.workers = {{1, 0, 0, 0, "in_driver"}, {2, 0, 0, 0, std::nullopt}};
  const std::vector<std::string> lines = spool_console::workers_table(s);
  EXPECT_NE(lines[0].find("STATE"), std::string::npos);
  EXPECT_NE(lines[1].find("in_driver"), std::string::npos);
  EXPECT_NE(lines[2].find(" - "), std::string::npos) << "an older runtime's: not said";
}

}  // namespace
