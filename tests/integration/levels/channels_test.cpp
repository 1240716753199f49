// Within a level, channels take turns (DESIGN §3): one busy channel cannot starve a sibling.
// On one thread (a one-worker multi-thread runtime, or a current-thread runtime) the turns
// are exact, so the tests check the order of polls and the poll counts exactly.
#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/levels.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::JoinHandle;
using spool::Level;
using spool::Task;
using spool_levels_test::HeldWorkers;
using spool_levels_test::note;
using spool_levels_test::Record;
using spool_levels_test::show;

class ChannelsAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(ChannelsAnyFlavor);

TEST_P(ChannelsAnyFlavor, AQuietChannelsTasksAreInterleavedWithABusySiblingsNotQueuedBehind) {
  constexpr int kBusy = 100, kQuiet = 10;
  auto rt = builder(1).levels({Level{"busy", "quiet"}}).build();
  const spool::ChannelId busy = rt.channel("busy"), quiet = rt.channel("quiet");
  Record record;
  std::vector<JoinHandle<void>> tasks;
  {
    HeldWorkers held(rt, is_multi_thread(), busy, 1);
    for (int i = 0; i < kBusy; ++i) tasks.push_back(rt.spawn_on(busy, note(&record, "B")));
    for (int i = 0; i < kQuiet; ++i) tasks.push_back(rt.spawn_on(quiet, note(&record, "q")));
    held.release();
    for (auto& t : tasks) wait(rt, t);
  }
  const std::vector<std::string> events = record.events();
  ASSERT_EQ(events.size(), static_cast<std::size_t>(kBusy + kQuiet));
  // While both channels have tasks, they alternate: the quiet channel's ten tasks are all
  // among the first twenty, one every other poll.
  int quiet_seen = 0;
  for (std::size_t i = 0; i < 2 * kQuiet; ++i) {
    if (events[i] == "q") ++quiet_seen;
    if (i > 0) {
      EXPECT_NE(events[i], events[i - 1]) << "poll " << i << ": " << show(events);
    }
  }
  EXPECT_EQ(quiet_seen, kQuiet) << show(events);
}

// Counts of one run (plain: every task runs on the runtime's one thread; the test reads them
// after joining the tasks, which orders the writes before the reads).
struct Shares {
  std::int64_t polls = 0;                     // over all channels
  std::array<std::int64_t, 3> per_channel{};  // polls counted per channel
};

// Polls until `limit` polls were counted in all, requeueing itself after each poll (it is
// runnable again at once: its channel stays saturated).
Task<void> saturate(Shares* s, std::size_t channel, std::int64_t limit) {
  while (s->polls < limit) {
    ++s->polls;
    ++s->per_channel[channel];
    co_await spool_levels_test::Requeue{};
  }
}

TEST_P(ChannelsAnyFlavor, SaturatingChannelsGetEqualSharesWhateverTheirTaskCounts) {
  constexpr std::int64_t kLimit = 3'000;
  auto rt = builder(1).levels({Level{"many", "two", "one"}}).build();
  const std::array<spool::ChannelId, 3> channels = {rt.channel("many"), rt.channel("two"),
                                                    rt.channel("one")};
  const std::array<int, 3> tasks_per_channel = {6, 2, 1};
  Shares s;
  std::vector<JoinHandle<void>> tasks;
  {
    HeldWorkers held(rt, is_multi_thread(), channels[0], 1);
    for (std::size_t c = 0; c < channels.size(); ++c) {
      for (int i = 0; i < tasks_per_channel[c]; ++i)
        tasks.push_back(rt.spawn_on(channels[c], saturate(&s, c, kLimit)));
    }
    held.release();
    for (auto& t : tasks) wait(rt, t);
  }
  ASSERT_EQ(s.polls, kLimit);
  for (std::size_t c = 0; c < channels.size(); ++c) {
    // Exact turns give kLimit / 3 each; one off for where the turns stood at the start.
    EXPECT_NEAR(s.per_channel[c], kLimit / 3, 1)
        << "channel " << c << ": " << s.per_channel[0] << " / " << s.per_channel[1] << " / "
        << s.per_channel[2];
  }
}

// The turns are per level: channels of a lower level take turns among themselves too, once
// the higher level is empty.
TEST_P(ChannelsAnyFlavor, ChannelsOfALowerLevelAlsoTakeTurns) {
  constexpr int kEach = 5;
  auto rt = builder(1).levels({Level{"top"}, Level{"x", "y"}}).build();
  const spool::ChannelId top = rt.channel("top"), x = rt.channel("x"), y = rt.channel("y");
  Record record;
  std::vector<JoinHandle<void>> tasks;
  {
    HeldWorkers held(rt, is_multi_thread(), top, 1);
    for (int i = 0; i < kEach; ++i) tasks.push_back(rt.spawn_on(x, note(&record, "x")));
    for (int i = 0; i < kEach; ++i) tasks.push_back(rt.spawn_on(y, note(&record, "y")));
    tasks.push_back(rt.spawn_on(top, note(&record, "top")));
    held.release();
    for (auto& t : tasks) wait(rt, t);
  }
  const std::vector<std::string> expected = {"top", "x", "y", "x", "y", "x",
                                             "y",   "x", "y", "x", "y"};
  EXPECT_EQ(record.events(), expected) << show(record.events());
}

}  // namespace
