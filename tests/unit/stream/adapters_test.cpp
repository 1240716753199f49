// The item adapters (map, filter, take, take_while, chunks, collect, merge, zip), each on a
// finite and an endless generator; owning and borrowing their stream; merge's fairness and
// zip's end; and their argument checks.
#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/block_on.hpp"
#include "spool/stream.hpp"
#include "support/counting_waker.hpp"
#include "support/futures.hpp"
#include "support/generators.hpp"

namespace {

using spool::Generator;
namespace st = spool::stream;

using spool_test::count_to;

// 0, 1, 2, ... without end.
Generator<int> naturals(int from = 0, int step = 1) {
  for (int i = from;; i += step) co_yield i;
}

template <class S>
auto collected(S&& s) {
  return spool::block_on(st::collect(std::forward<S>(s)));
}

static_assert(spool::Stream<st::Map<Generator<int>, int (*)(int)>>);
static_assert(spool::Stream<st::Take<Generator<int>&>>);

TEST(StreamMap, Finite) {
  EXPECT_EQ(collected(st::map(count_to(3), [](int v) { return std::to_string(v * 10); })),
            (std::vector<std::string>{"0", "10", "20"}));
}

TEST(StreamMap, Endless) {
  EXPECT_EQ(collected(st::take(st::map(naturals(), [](int v) { return v * v; }), 4)),
            (std::vector<int>{0, 1, 4, 9}));
}

const std::string& name_of(int v) {
  static const std::vector<std::string> names{"zero", "one", "two"};
  return names.at(static_cast<std::size_t>(v));
}
static_assert(
    std::is_same_v<spool::stream_item_t<st::Map<Generator<int>, decltype(&name_of)>>, std::string>);

TEST(StreamMap, AFunctionReturningAReferenceGivesCopies) {
  EXPECT_EQ(collected(st::map(count_to(3), name_of)),
            (std::vector<std::string>{"zero", "one", "two"}));
}

TEST(StreamFilter, Finite) {
  EXPECT_EQ(collected(st::filter(count_to(7), [](int v) { return v % 3 == 0; })),
            (std::vector<int>{0, 3, 6}));
}

TEST(StreamFilter, Endless) {
  EXPECT_EQ(collected(st::take(st::filter(naturals(), [](int v) { return v % 2 == 1; }), 3)),
            (std::vector<int>{1, 3, 5}));
}

TEST(StreamTake, FiniteShorterThanNEndsWithTheStream) {
  EXPECT_EQ(collected(st::take(count_to(2), 5)), (std::vector<int>{0, 1}));
  EXPECT_EQ(collected(st::take(count_to(2), 0)), std::vector<int>{});
}

TEST(StreamTake, EndlessStopsAtNAndNeverPollsPastIt) {
  int made = 0;
  auto counting = [](int* made) -> Generator<int> {
    for (;;) co_yield ++*made;
  };
  EXPECT_EQ(collected(st::take(counting(&made), 3)), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(made, 3);
}

TEST(StreamTake, BorrowsAnLvalueWhichGoesOnAfterwards) {
  auto gen = naturals();
  EXPECT_EQ(collected(st::take(gen, 2)), (std::vector<int>{0, 1}));
  EXPECT_EQ(collected(st::take(gen, 2)), (std::vector<int>{2, 3}));
}

TEST(StreamTakeWhile, FiniteEndsWithTheStream) {
  EXPECT_EQ(collected(st::take_while(count_to(3), [](int v) { return v < 10; })),
            (std::vector<int>{0, 1, 2}));
}

TEST(StreamTakeWhile, EndlessStopsAtTheFirstFailure) {
  EXPECT_EQ(collected(st::take_while(naturals(), [](int v) { return v * v < 10; })),
            (std::vector<int>{0, 1, 2, 3}));
}

TEST(StreamChunks, FiniteWithAShorterLastChunk) {
  EXPECT_EQ(collected(st::chunks(count_to(5), 2)),
            (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(collected(st::chunks(count_to(0), 2)), std::vector<std::vector<int>>{});
}

TEST(StreamChunks, Endless) {
  EXPECT_EQ(collected(st::take(st::chunks(naturals(), 3), 2)),
            (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}}));
}

TEST(StreamChunks, SizeZeroIsRefused) {
  EXPECT_THROW((void)st::chunks(count_to(1), 0), std::invalid_argument);
}

TEST(StreamCollect, FiniteInOrderAndEmpty) {
  EXPECT_EQ(collected(count_to(4)), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(collected(count_to(0)), std::vector<int>{});
}

TEST(StreamCollect, EndlessThroughTake) {
  EXPECT_EQ(collected(st::take(naturals(5), 2)), (std::vector<int>{5, 6}));
}

TEST(StreamMerge, FiniteAlternatesThenDrainsTheLonger) {
  EXPECT_EQ(collected(st::merge(count_to(2), st::take(naturals(10), 3))),
            (std::vector<int>{0, 10, 1, 11, 12}));
}

TEST(StreamMerge, EndlessStreamsShareFairly) {
  EXPECT_EQ(collected(st::take(st::merge(naturals(0, 2), naturals(1, 2)), 6)),
            (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

Generator<int> after_signal(spool_test::Signal s, int value) {
  co_await s.future();
  co_yield value;
}

TEST(StreamMerge, APendingSideDoesNotHoldBackTheOther) {
  spool_test::Signal s;
  auto merged = st::merge(after_signal(s, 99), count_to(2));
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  EXPECT_EQ(merged.poll_next(cx).value(), std::optional<int>(0));
  EXPECT_EQ(merged.poll_next(cx).value(), std::optional<int>(1));
  EXPECT_TRUE(merged.poll_next(cx).is_pending());  // count_to ended; the other waits
  s.fire();
  EXPECT_EQ(merged.poll_next(cx).value(), std::optional<int>(99));
  EXPECT_EQ(merged.poll_next(cx).value(), std::nullopt);
}

// Polls `s` by hand to its end, then once more: the end again, without polling its stream (a
// Generator, which throws when asked after its end).
template <class S>
void expect_the_end_again(S s) {
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  for (int items = 0; items < 10; ++items) {
    auto p = s.poll_next(cx);
    ASSERT_TRUE(p.is_ready());
    if (!p.value()) break;
  }
  auto again = s.poll_next(cx);
  ASSERT_TRUE(again.is_ready());
  EXPECT_FALSE(again.value().has_value());
}

TEST(StreamAdapters, PolledAfterTheirEndTheyEndAgain) {
  const auto always = [](int) { return true; };
  expect_the_end_again(st::map(count_to(2), [](int v) { return v; }));
  expect_the_end_again(st::filter(count_to(2), always));
  expect_the_end_again(st::take(count_to(2), 5));
  expect_the_end_again(st::take_while(count_to(2), always));
  expect_the_end_again(st::chunks(count_to(2), 5));
  expect_the_end_again(st::merge(count_to(2), count_to(1)));
  expect_the_end_again(st::zip(count_to(2), count_to(3)));
  // Items ready at once: no timer is made (an hour would not pass anyway).
  expect_the_end_again(st::timeout(count_to(2), std::chrono::hours(1)));
  expect_the_end_again(st::throttle(count_to(0), std::chrono::hours(1)));
}

// Polls `s` pending with one waker, then with another, then fires `s`'s signal: the stream
// must have passed the second on (the latest waker is the one to wake).
template <class S>
void expect_the_latest_waker_woken(S& s, const spool_test::Signal& signal) {
  spool_test::CountingWaker first;
  spool_test::CountingWaker second;
  for (auto* w : {&first, &second}) {
    spool::Waker waker = w->waker();
    spool::Context cx(waker);
    EXPECT_TRUE(s.poll_next(cx).is_pending());
  }
  signal.fire();
  EXPECT_EQ(second.counts().total_wakes(), 1);
  EXPECT_EQ(first.counts().total_wakes(), 0);
}

TEST(StreamWakers, APolledGeneratorWakesTheLatestWaker) {
  spool_test::Signal s;
  auto gen = after_signal(s, 1);
  expect_the_latest_waker_woken(gen, s);
}

TEST(StreamWakers, MergeWakesTheLatestWakerForItsPendingSide) {
  spool_test::Signal s;
  auto merged = st::merge(after_signal(s, 1), count_to(0));
  expect_the_latest_waker_woken(merged, s);
}

TEST(StreamWakers, ZipWakesTheLatestWakerForItsWaitingSide) {
  spool_test::Signal s;
  auto zipped = st::zip(count_to(3), after_signal(s, 1));
  expect_the_latest_waker_woken(zipped, s);
}

Generator<int> one_then_after_signal(spool_test::Signal s) {
  co_yield 0;
  co_await s.future();
  co_yield 1;
}

TEST(StreamWakers, ChunksTimeoutWakesTheLatestWakerWhileItsChunkWaits) {
  spool_test::Signal s;
  // The chunk holds 0 and waits for the next item, its deadline armed (an hour: it never
  // passes during the test; the Sleep is disarmed when the adapter goes).
  auto chunked = st::chunks_timeout(one_then_after_signal(s), 2, std::chrono::hours(1));
  expect_the_latest_waker_woken(chunked, s);
}

TEST(StreamZip, FiniteEndsWithTheShorter) {
  EXPECT_EQ(collected(st::zip(count_to(2), naturals(100))),
            (std::vector<std::pair<int, int>>{{0, 100}, {1, 101}}));
}

TEST(StreamZip, Endless) {
  EXPECT_EQ(
      collected(st::take(
          st::zip(naturals(), st::map(naturals(), [](int v) { return std::to_string(v); })), 2)),
      (std::vector<std::pair<int, std::string>>{{0, "0"}, {1, "1"}}));
}

TEST(StreamZip, WaitsForTheSlowerSideKeepingTheFasterItem) {
  spool_test::Signal s;
  auto zipped = st::zip(count_to(3), after_signal(s, 7));
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  EXPECT_TRUE(zipped.poll_next(cx).is_pending());
  s.fire();
  auto pair = zipped.poll_next(cx);
  ASSERT_TRUE(pair.is_ready());
  EXPECT_EQ(pair.value(), (std::optional<std::pair<int, int>>({0, 7})));
  EXPECT_EQ(zipped.poll_next(cx).value(), std::nullopt);
}

}  // namespace
