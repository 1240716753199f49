// Stream sources on the paused clock: a Generator awaiting a timer and an mpsc channel, and
// mpsc::Receiver, Interval, BroadcastStream and WatchStream consumed as spool::Streams through
// spool::next; a stream as a select branch.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Generator;
using spool::Instant;
using spool::Task;
using spool_time_test::paused_runtime;
using ms = std::chrono::milliseconds;

static_assert(spool::Stream<Generator<int>>);
static_assert(spool::Stream<spool::mpsc::Receiver<int>>);
static_assert(spool::Stream<spool::Interval>);
static_assert(spool::Stream<spool::stream::BroadcastStream<int>>);
static_assert(spool::Stream<spool::stream::WatchStream<int>>);
static_assert(!spool::Stream<int>);
static_assert(!spool::Stream<spool::Sleep>);  // a Future, not a Stream
static_assert(std::is_same_v<spool::stream_item_t<spool::Interval>, Instant>);
static_assert(std::is_same_v<spool::stream_item_t<Generator<int>&>, int>);
// spool::next of a Generator is its own next(), which nests in the awaiting chain.
static_assert(
    std::is_same_v<decltype(spool::next(std::declval<Generator<int>&>())), Generator<int>::Next>);

ms since(Instant start) { return std::chrono::duration_cast<ms>(spool::time::now() - start); }

// Sleeps 10 ms, yields the time, then yields every value received, each with its time.
Generator<std::string> timed_and_received(spool::mpsc::Receiver<int> rx) {
  const Instant start = spool::time::now();
  co_await spool::sleep(10ms);
  co_yield "slept until " + std::to_string(since(start).count());
  while (auto v = co_await rx.recv()) {
    co_yield "got " + std::to_string(*v) + " at " + std::to_string(since(start).count());
  }
}

// A spawned task's parameters live as long as its JoinHandle keeps the frame: the sender is
// moved into a local so that it is dropped (closing the channel) when the body ends.
Task<void> send_slowly(spool::mpsc::Sender<int> sender) {
  auto tx = std::move(sender);
  for (int i = 1; i <= 2; ++i) {
    co_await spool::sleep(5ms);
    (void)co_await tx.send(i);
  }
}

Task<std::vector<std::string>> consume_timed_and_received() {
  auto [tx, rx] = spool::mpsc::channel<int>(1);
  auto gen = timed_and_received(std::move(rx));
  auto producer = spool::spawn(send_slowly(std::move(tx)));
  std::vector<std::string> out;
  while (auto v = co_await gen.next()) out.push_back(std::move(*v));
  co_await producer;
  co_return out;
}

TEST(GeneratorSources, AwaitsATimerAndAChannel) {
  auto rt = paused_runtime();
  // The producer started at 0 ms, in step with the generator's sleep.
  EXPECT_EQ(rt.block_on(consume_timed_and_received()),
            (std::vector<std::string>{"slept until 10", "got 1 at 10", "got 2 at 10"}));
}

Generator<int> sleeps_then_yields(ms delay, int value) {
  co_await spool::sleep(delay);
  co_yield value;
}

// "<value or elapsed>@<ms>" for a timeout on next() that expires, then a co_await of next().
Task<std::vector<std::string>> await_next_after_a_timeout() {
  const Instant start = spool::time::now();
  auto gen = sleeps_then_yields(20ms, 7);
  std::vector<std::string> out;
  auto first = co_await spool::timeout(10ms, gen.next());
  out.push_back((first ? "?" : "elapsed") + ("@" + std::to_string(since(start).count())));
  auto v = co_await gen.next();  // goes on from the sleep the timeout left pending
  out.push_back(std::to_string(v.value_or(-1)) + "@" + std::to_string(since(start).count()));
  out.push_back(co_await gen.next() ? "?" : "end");
  co_return out;
}

TEST(GeneratorSources, AwaitingNextAfterATimeoutOnNextExpiredGetsTheValue) {
  auto rt = paused_runtime();
  EXPECT_EQ(rt.block_on(await_next_after_a_timeout()),
            (std::vector<std::string>{"elapsed@10", "7@20", "end"}));
}

Task<std::vector<int>> drain_receiver() {
  auto [tx, rx] = spool::mpsc::unbounded_channel<int>();
  for (int i = 0; i < 3; ++i) (void)tx.send(i);
  std::vector<int> out;
  { auto gone = std::move(tx); }
  while (auto v = co_await spool::next(rx)) out.push_back(*v);
  // A receiver's stream gives nullopt again after its end.
  EXPECT_EQ(co_await spool::next(rx), std::nullopt);
  co_return out;
}

TEST(StreamSources, MpscReceiverIsAStreamThatEndsWhenTheSendersAreGone) {
  EXPECT_EQ(spool::block_on(drain_receiver()), (std::vector<int>{0, 1, 2}));
}

Task<std::vector<ms>> three_ticks() {
  const Instant start = spool::time::now();
  auto iv = spool::interval(10ms);
  std::vector<ms> out;
  for (int i = 0; i < 3; ++i) {
    auto tick = co_await spool::next(iv);
    out.push_back(std::chrono::duration_cast<ms>(tick.value() - start));
  }
  co_return out;
}

TEST(StreamSources, IntervalIsAnEndlessStreamOfTicks) {
  auto rt = paused_runtime();
  EXPECT_EQ(rt.block_on(three_ticks()), (std::vector<ms>{0ms, 10ms, 20ms}));
}

// "v<message>", "lag<missed>".
Task<std::vector<std::string>> broadcast_outcomes() {
  auto [tx, rx] = spool::broadcast::channel<int>(2);
  spool::stream::BroadcastStream<int> s(std::move(rx));
  for (int i = 0; i < 3; ++i) (void)tx.send(i);  // 0 is overwritten before it is read
  std::vector<std::string> out;
  auto first = co_await spool::next(s);
  out.push_back(first->lagged() ? "lag" + std::to_string(first->missed()) : "?");
  auto second = co_await spool::next(s);
  out.push_back("v" + std::to_string(second->value()));
  auto third = co_await spool::next(s);
  out.push_back("v" + std::to_string(third->value()));
  auto late_sender = spool::spawn([](spool::broadcast::Sender<int> sender) -> Task<void> {
    auto last = std::move(sender);  // dropped at the body's end (see send_slowly)
    co_await spool::sleep(1ms);
    (void)last.send(3);
  }(std::move(tx)));
  while (auto r = co_await spool::next(s)) out.push_back("v" + std::to_string(r->value()));
  co_await late_sender;
  co_return out;
}

TEST(StreamSources, BroadcastStreamGivesLagsAndMessagesAndEndsWhenClosed) {
  auto rt = paused_runtime();
  EXPECT_EQ(rt.block_on(broadcast_outcomes()),
            (std::vector<std::string>{"lag1", "v1", "v2", "v3"}));
}

TEST(StreamSources, MovingABroadcastStreamWhoseReceiveWaitsThrows) {
  auto [tx, rx] = spool::broadcast::channel<int>(2);
  spool::stream::BroadcastStream<int> s(std::move(rx));
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  EXPECT_TRUE(s.poll_next(cx).is_pending());  // waits in the channel's queue
  EXPECT_THROW(spool::stream::BroadcastStream<int>(std::move(s)), std::logic_error);
  (void)tx.send(4);
  EXPECT_EQ(s.poll_next(cx).value()->value(), 4);  // unharmed
}

// A receive refused by the task's budget is in progress without waiting: the moved-to stream
// must not go on with it (it borrows the moved-from stream's receiver).
Task<int> move_after_a_refused_receive() {
  auto [tx, rx] = spool::broadcast::channel<int>(2);
  (void)tx.send(5);
  spool::stream::BroadcastStream<int> s(std::move(rx));
  co_await spool::poll_fn([&s](spool::Context& cx) {
    while (spool::detail::coop_poll_proceed(cx)) {
    }                                           // the task's budget is spent
    EXPECT_TRUE(s.poll_next(cx).is_pending());  // refused, though a message is there
    return spool::Poll<void>::ready();
  });
  spool::stream::BroadcastStream<int> moved(std::move(s));
  auto r = co_await spool::next(moved);
  co_return r.value().value();
}

TEST(StreamSources, ABroadcastStreamMovedAfterARefusedReceiveReadsThroughItsOwnReceiver) {
  auto rt = paused_runtime();
  // Spawned: a runtime task has a budget (block_on's root has none).
  EXPECT_EQ(rt.block_on(rt.spawn(move_after_a_refused_receive())), 5);
}

// Values from 4 producer tasks, relayed by a generator that yields to the scheduler before
// each value, so that its consuming task moves between the 2 workers between next()s (the
// generator's frame with it). Bounded by count; meant for TSan as well.
constexpr int kProducers = 4;
constexpr int kPerProducer = 2'000;

Generator<int> relay(spool::mpsc::Receiver<int> rx) {
  while (auto v = co_await rx.recv()) {
    co_await spool::yield_now();
    co_yield *v;
  }
}

Task<void> produce(spool::mpsc::Sender<int> sender, int from) {
  auto tx = std::move(sender);  // dropped at the body's end (see send_slowly)
  for (int i = 0; i < kPerProducer; ++i) (void)co_await tx.send(from + i);
}

Task<long> sum_all(Generator<int> gen) {
  long sum = 0;
  while (auto v = co_await gen.next()) sum += *v;
  co_return sum;
}

Task<long> relay_on_workers() {
  auto [tx, rx] = spool::mpsc::channel<int>(8);
  std::vector<spool::JoinHandle<void>> producers;
  for (int p = 0; p < kProducers; ++p)
    producers.push_back(spool::spawn(produce(tx, p * kPerProducer)));
  { auto last = std::move(tx); }
  const long sum = co_await spool::spawn(sum_all(relay(std::move(rx))));
  for (auto& h : producers) co_await h;
  co_return sum;
}

// The value held first, then the latest of two sends (watch coalesces them), then, after a
// move while a wait pends, the last value and the end once the sender is gone.
Task<std::vector<int>> watch_values() {
  auto [tx, rx] = spool::watch::channel<int>(0);
  spool::stream::WatchStream<int> s(std::move(rx));
  std::vector<int> out;
  out.push_back((co_await spool::next(s)).value());
  (void)tx.send(1);
  (void)tx.send(2);
  out.push_back((co_await spool::next(s)).value());
  {
    auto waiting = spool::next(s);
    EXPECT_FALSE(co_await spool_time_test::poll_once(waiting));  // nothing new yet
  }
  spool::stream::WatchStream<int> moved(std::move(s));  // its wait moves with it
  auto late_sender = spool::spawn([](spool::watch::Sender<int> sender) -> Task<void> {
    auto last = std::move(sender);  // dropped at the body's end
    co_await spool::yield_now();
    (void)last.send(3);
  }(std::move(tx)));
  while (auto v = co_await spool::next(moved)) out.push_back(*v);
  co_await late_sender;
  co_return out;
}

TEST(StreamSources, WatchStreamGivesTheValueThenEachNewerOneAndEndsWhenClosed) {
  auto rt = spool::Builder::current_thread().build();
  EXPECT_EQ(rt.block_on(watch_values()), (std::vector<int>{0, 2, 3}));
}

TEST(StreamSources, WatchStreamFromChangesSkipsTheValueHeld) {
  auto [tx, rx] = spool::watch::channel<int>(0);
  auto s = spool::stream::WatchStream<int>::from_changes(std::move(rx));
  {
    auto first = spool::next(s);
    spool_test::HandPoller poller;
    EXPECT_TRUE(poller.poll(first).is_pending());  // 0, the value held, is not given
  }
  (void)tx.send(5);
  EXPECT_EQ(spool::block_on(spool::next(s)), 5);
  auto moved = std::move(s);
  EXPECT_THROW((void)spool::block_on(spool::next(s)), std::logic_error);  // NOLINT: moved from
}

// A stream as a select branch: each time the timer wins, the pending next() is dropped, and
// no message is lost or repeated.
Task<std::pair<std::vector<int>, int>> select_stream_or_timer() {
  auto [tx, rx] = spool::mpsc::unbounded_channel<int>();
  auto sender = spool::spawn([](spool::mpsc::UnboundedSender<int> out) -> Task<void> {
    auto last = std::move(out);  // dropped at the body's end: the stream ends
    for (int i = 0; i < 3; ++i) {
      co_await spool::sleep(10ms);
      (void)last.send(i);
    }
  }(std::move(tx)));
  std::vector<int> got;
  int timer_wins = 0;
  for (;;) {
    auto won = co_await spool::select(spool::next(rx), spool::sleep(4ms));
    if (won.index() == 1) {
      ++timer_wins;
      continue;
    }
    const std::optional<int> v = std::get<0>(std::move(won));
    if (!v) break;
    got.push_back(*v);
  }
  co_await sender;
  co_return std::pair(got, timer_wins);
}

TEST(StreamSources, AStreamInSelectLosesNothingWhenTheOtherBranchWins) {
  auto rt = paused_runtime();
  const auto [got, timer_wins] = rt.block_on(select_stream_or_timer());
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
  EXPECT_GE(timer_wins, 3);  // at least one per message: 10 ms between them, a 4 ms timer
}

TEST(GeneratorSources, ConsumedByATaskMovingBetweenWorkers) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  constexpr long n = static_cast<long>(kProducers) * kPerProducer;
  EXPECT_EQ(rt.block_on(relay_on_workers()), n * (n - 1) / 2);
}

}  // namespace
