// Builder::levels / schedule / default_channel: every invalid configuration is refused by
// build() with a message naming the problem; Runtime::channel finds channels by name; spawns
// go where docs/levels.md says (spawn_on's channel, the spawner's, or the default).
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_tasks.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Builder;
using spool::Level;
using spool::RoundRobin;

// The message of the std::invalid_argument that building `b` throws ("" if it builds).
std::string build_error(Builder b) {
  try {
    b.build();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// Expects `text` to contain `part`, and prints `text` when it does not.
#define EXPECT_SAYS(text, part)                                              \
  do {                                                                       \
    const std::string text_ = (text);                                        \
    EXPECT_NE(text_.find(part), std::string::npos) << "\"" << text_ << "\""; \
  } while (0)

TEST(LevelsConfig, NoLevelsIsRefused) {
  EXPECT_SAYS(build_error(Builder::multi_thread().levels({})), "needs at least one level");
}

TEST(LevelsConfig, AnEmptyLevelIsRefused) {
  EXPECT_SAYS(build_error(Builder::multi_thread().levels(
                  {Level{"a"}, Level(std::vector<spool::Channel>{})})),
              "level 1 has no channel");
}

TEST(LevelsConfig, AnEmptyChannelNameIsRefused) {
  EXPECT_SAYS(build_error(Builder::multi_thread().levels({Level{""}})), "empty name");
}

TEST(LevelsConfig, ADuplicateChannelNameIsRefused) {
  EXPECT_SAYS(build_error(Builder::multi_thread().levels({Level{"a", "b"}, Level{"b"}})),
              "\"b\" is used twice");
}

TEST(LevelsConfig, TooManyLevelsAreRefusedWithTheLimit) {
  std::vector<Level> levels;
  for (std::size_t i = 0; i <= spool::kMaxLevels; ++i)
    levels.push_back(Level{"c" + std::to_string(i)});
  EXPECT_SAYS(build_error(Builder::multi_thread().levels(levels)),
              "at most " + std::to_string(spool::kMaxLevels));
}

TEST(LevelsConfig, TooManyChannelsAreRefusedWithTheLimit) {
  std::vector<spool::Channel> channels;
  for (std::size_t i = 0; i <= spool::kMaxChannels; ++i)
    channels.emplace_back("c" + std::to_string(i));
  EXPECT_SAYS(build_error(Builder::multi_thread().levels({Level(channels)})),
              "at most " + std::to_string(spool::kMaxChannels));
}

TEST(LevelsConfig, ASliceCountOtherThanTheLevelCountIsRefused) {
  EXPECT_SAYS(
      build_error(
          Builder::multi_thread().levels({Level{"a"}, Level{"b"}}).schedule(RoundRobin{{1ms}})),
      "1 slices for 2 levels");
}

TEST(LevelsConfig, AZeroOrNegativeSliceIsRefused) {
  EXPECT_SAYS(build_error(Builder::multi_thread()
                              .levels({Level{"a"}, Level{"b"}})
                              .schedule(RoundRobin{{1ms, 0ms}})),
              "slice of level 1 is 0 ns");
  EXPECT_SAYS(build_error(Builder::multi_thread()
                              .levels({Level{"a"}, Level{"b"}})
                              .schedule(RoundRobin{{-1ms, 1ms}})),
              "slice of level 0 is -1000000 ns");
}

TEST(LevelsConfig, ASliceLongerThanAnHourIsRefused) {
  EXPECT_SAYS(build_error(Builder::multi_thread()
                              .levels({Level{"a"}, Level{"b"}})
                              .schedule(RoundRobin{{1ms, std::chrono::nanoseconds::max()}})),
              "slice of level 1 is 9223372036854775807 ns; a slice is at most one hour");
  // One hour exactly is accepted.
  EXPECT_NO_THROW(Builder::current_thread()
                      .levels({Level{"a"}, Level{"b"}})
                      .schedule(RoundRobin{{std::chrono::hours(1), 1ms}})
                      .build());
}

TEST(LevelsConfig, RoundRobinWithoutLevelsIsRefused) {
  EXPECT_SAYS(build_error(Builder::multi_thread().schedule(RoundRobin{{1ms}})), "need levels()");
}

TEST(LevelsConfig, AnUnknownDefaultChannelIsRefusedNamingTheChannels) {
  std::string what =
      build_error(Builder::multi_thread().levels({Level{"a"}, Level{"b"}}).default_channel("c"));
  EXPECT_SAYS(what, "default_channel(\"c\"): no such channel");
  EXPECT_SAYS(what, "a, b");
}

class LevelsAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(LevelsAnyFlavor);

TEST_P(LevelsAnyFlavor, ChannelFindsEachChannelByNameHighestLevelFirst) {
  auto rt = builder().levels({Level{"ui"}, Level{"tenant-a", "tenant-b"}}).build();
  EXPECT_EQ(rt.channel("ui").index(), 0);
  EXPECT_EQ(rt.channel("tenant-a").index(), 1);
  EXPECT_EQ(rt.handle().channel("tenant-b").index(), 2);
  try {
    (void)rt.channel("nope");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_SAYS(std::string(e.what()), "no channel named \"nope\"");
    EXPECT_SAYS(std::string(e.what()), "ui, tenant-a, tenant-b");
  }
}

TEST_P(LevelsAnyFlavor, ARuntimeWithoutLevelsHasOneDefaultChannel) {
  auto rt = build();
  EXPECT_EQ(rt.channel("default").index(), 0);
}

using spool_rt_test::value;

TEST_P(LevelsAnyFlavor, SpawnOnWithAnotherRuntimesChannelIsRefused) {
  auto a = builder().levels({Level{"x"}, Level{"y"}}).build();
  auto b = builder().levels({Level{"x"}, Level{"y"}}).build();
  try {
    (void)a.spawn_on(b.channel("y"), value(1));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_SAYS(std::string(e.what()), "ChannelId of another runtime");
  }
  EXPECT_EQ(wait(a, a.spawn_on(a.channel("y"), value(2))), 2);
}

}  // namespace
