// The timed adapters (timeout, throttle, chunks_timeout) on the paused clock, each on a
// finite generator and an endless Interval, with the instant each item came; their duration
// checks; and adapters under a foreign executor (spool's timers then run on their fallback).
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Generator;
using spool::Instant;
using spool::Task;
using spool_time_test::paused_runtime;
namespace st = spool::stream;

long ms_since(Instant start) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(spool::time::now() - start).count());
}

// Each item of the stream `make()` builds (on the runtime, so that its timers are the
// paused clock's) as "<describe(item)>@<ms since the start>".
template <class Make, class Describe>
Task<std::vector<std::string>> timeline(Make make, Describe describe) {
  const Instant start = spool::time::now();
  auto s = make();
  std::vector<std::string> out;
  while (auto v = co_await spool::next(s)) {
    out.push_back(describe(*v) + "@" + std::to_string(ms_since(start)));
  }
  co_return out;
}

template <class Make, class Describe>
std::vector<std::string> paused_timeline(Make make, Describe describe) {
  auto rt = paused_runtime();
  return rt.block_on(timeline(make, describe));
}

std::string number(int v) { return std::to_string(v); }

// Yields each of `values` after sleeping the matching delay.
Generator<int> delayed(std::vector<std::pair<std::chrono::milliseconds, int>> values) {
  for (auto [delay, v] : values) {
    co_await spool::sleep(delay);
    co_yield v;
  }
}

template <class T>
std::string completed_or_elapsed(const spool::TimeoutResult<T>& r) {
  return r ? "ok" : "elapsed";
}

TEST(StreamTimeout, FiniteItemsLateAndOnTime) {
  EXPECT_EQ(paused_timeline(
                [] {
                  return st::timeout(delayed({{0ms, 1}, {30ms, 2}}), 20ms);
                },
                completed_or_elapsed<int>),
            (std::vector<std::string>{"ok@0", "elapsed@20", "ok@30"}));
}

TEST(StreamTimeout, EndlessTicksSlowerThanTheLimit) {
  EXPECT_EQ(paused_timeline([] { return st::take(st::timeout(spool::interval(10ms), 6ms), 5); },
                            completed_or_elapsed<Instant>),
            (std::vector<std::string>{"ok@0", "elapsed@6", "ok@10", "elapsed@16", "ok@20"}));
}

TEST(StreamThrottle, FiniteItemsAreSpacedByThePeriod) {
  EXPECT_EQ(paused_timeline(
                [] {
                  return st::throttle(delayed({{0ms, 1}, {0ms, 2}, {25ms, 3}}), 10ms);
                },
                number),
            // The generator runs again only when throttle asks (at 20 ms), then sleeps 25 ms.
            (std::vector<std::string>{"1@0", "2@10", "3@45"}));
}

TEST(StreamThrottle, EndlessReadyStreamIsSlowedDown) {
  auto throttled = [] {
    auto naturals = []() -> Generator<int> {
      for (int i = 0;; ++i) co_yield i;
    };
    return st::take(st::throttle(naturals(), 10ms), 3);
  };
  EXPECT_EQ(paused_timeline(throttled, number), (std::vector<std::string>{"0@0", "1@10", "2@20"}));
}

std::string joined(const std::vector<int>& chunk) {
  std::string out;
  for (int v : chunk) out += (out.empty() ? "" : ",") + std::to_string(v);
  return "[" + out + "]";
}

TEST(StreamChunksTimeout, FiniteChunkGoesOutShortWhenItWaitedTooLong) {
  EXPECT_EQ(paused_timeline(
                [] {
                  return st::chunks_timeout(delayed({{0ms, 0}, {5ms, 1}, {50ms, 2}}), 3, 20ms);
                },
                joined),
            (std::vector<std::string>{"[0,1]@20", "[2]@55"}));
}

TEST(StreamChunksTimeout, EndlessFullChunksAndTimedOutOnes) {
  // Ticks at 0, 10, 20, ...: a chunk of at most 5 that waits at most 25 ms from its first.
  auto chunked = [] { return st::take(st::chunks_timeout(spool::interval(10ms), 5, 25ms), 2); };
  EXPECT_EQ(paused_timeline(chunked,
                            [](const std::vector<Instant>& c) { return std::to_string(c.size()); }),
            (std::vector<std::string>{"3@25", "3@55"}));
}

TEST(StreamTimedAdapters, NegativeDurationsAreRefused) {
  auto gen = []() -> Generator<int> { co_return; };
  EXPECT_THROW((void)st::timeout(gen(), -1ms), std::invalid_argument);
  EXPECT_THROW((void)st::throttle(gen(), -1ms), std::invalid_argument);
  EXPECT_THROW((void)st::chunks_timeout(gen(), 2, -1ms), std::invalid_argument);
}

TEST(StreamAdapters, RunUnderAForeignExecutor) {
  auto naturals = []() -> Generator<int> {
    for (int i = 0;; ++i) co_yield i;
  };
  auto all = st::collect(
      st::map(st::take(st::zip(st::throttle(naturals(), 1ms), st::timeout(naturals(), 1s)), 3),
              [](auto pair) { return pair.first + pair.second.value(); }));
  int pending_polls = 0;
  EXPECT_EQ(spool_time_test::run_foreign(all, nullptr, &pending_polls),
            (std::vector<int>{0, 2, 4}));
  EXPECT_GT(pending_polls, 0);  // throttle waited: the background timer thread woke it
}

}  // namespace
