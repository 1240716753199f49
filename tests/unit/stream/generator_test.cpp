// spool::Generator, driven by spool::block_on and by hand: empty, one value, 10^6 values,
// an exception after k values, move-only values, the consumer dropping it mid-stream (every
// local destroyed once), a pending poll_next dropped and resumed, nesting 10^5 deep without
// stack growth, and each misuse's error.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "spool/block_on.hpp"
#include "spool/stream/generator.hpp"
#include "spool/time/timeout.hpp"
#include "support/futures.hpp"
#include "support/generators.hpp"

namespace {

using spool::Generator;
using spool::Task;
using spool_test::Signal;

using spool_test::count_to;

// Everything a consumer loop gets from `gen`.
Task<std::vector<int>> drain(Generator<int> gen) {
  std::vector<int> out;
  while (auto v = co_await gen.next()) out.push_back(*v);
  co_return out;
}

// The message of the std::logic_error `f` throws ("" when it throws none).
template <class F>
std::string logic_error_of(F&& f) {
  try {
    f();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

TEST(Generator, EmptyEndsAtOnce) {
  EXPECT_EQ(spool::block_on(drain(count_to(0))), std::vector<int>{});
}

TEST(Generator, OneValue) { EXPECT_EQ(spool::block_on(drain(count_to(1))), std::vector<int>{0}); }

Generator<std::uint64_t> naturals_below(std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) co_yield i;
}

Task<std::uint64_t> sum_of(Generator<std::uint64_t> gen) {
  std::uint64_t sum = 0;
  while (auto v = co_await gen.next()) sum += *v;
  co_return sum;
}

TEST(Generator, AMillionValuesInOrder) {
  constexpr std::uint64_t n = 1'000'000;
  EXPECT_EQ(spool::block_on(sum_of(naturals_below(n))), n * (n - 1) / 2);
}

Generator<int> throws_after(int k) {
  for (int i = 0; i < k; ++i) co_yield i;
  throw std::runtime_error("boom after k");
}

Task<void> expect_k_then_throw(int k) {
  auto gen = throws_after(k);
  for (int i = 0; i < k; ++i) EXPECT_EQ(co_await gen.next(), std::optional<int>(i));
  bool threw = false;
  try {
    (void)co_await gen.next();
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()) == "boom after k";
  }
  EXPECT_TRUE(threw);
  // The exception was the end: asking again is a misuse.
  bool misuse = false;
  try {
    (void)co_await gen.next();
  } catch (const std::logic_error& e) {
    misuse = std::string(e.what()).find("already ended") != std::string::npos;
  }
  EXPECT_TRUE(misuse);
}

TEST(Generator, ExceptionAfterKValuesReachesTheConsumerThenItHasEnded) {
  spool::block_on(expect_k_then_throw(3));
  spool::block_on(expect_k_then_throw(0));
}

TEST(Generator, NextAfterTheEndThrows) {
  auto gen = count_to(0);
  EXPECT_EQ(spool::block_on(gen.next()), std::nullopt);
  EXPECT_NE(logic_error_of([&] { spool::block_on(gen.next()); }).find("already ended"),
            std::string::npos);
}

TEST(Generator, EmptyGeneratorThrows) {
  Generator<int> gen;
  EXPECT_FALSE(gen.valid());
  EXPECT_NE(logic_error_of([&] { (void)gen.next(); }).find("empty"), std::string::npos);
  auto moved_to = count_to(1);
  gen = std::move(moved_to);
  EXPECT_TRUE(gen.valid());
  EXPECT_NE(logic_error_of([&] { (void)moved_to.next(); }).find("empty"), std::string::npos);
}

Generator<std::unique_ptr<int>> boxes(int n) {
  for (int i = 0; i < n; ++i) co_yield std::make_unique<int>(i);
}

TEST(Generator, MoveOnlyValuesAreMovedOut) {
  auto gen = boxes(2);
  auto first = spool::block_on(gen.next());
  ASSERT_TRUE(first && *first);
  EXPECT_EQ(**first, 0);
  auto second = spool::block_on(gen.next());
  ASSERT_TRUE(second && *second);
  EXPECT_EQ(**second, 1);
}

// Counts its constructions and destructions (one thread per test).
struct Counted {
  static inline int made = 0;
  static inline int destroyed = 0;
  Counted() { ++made; }
  Counted(const Counted&) { ++made; }
  ~Counted() { ++destroyed; }
};

Task<int> holds_a_counted_then_waits(Signal::Future never) {
  Counted held;
  co_await never;
  co_return 1;
}

Generator<int> inner_with_locals() {
  Counted a;
  co_yield 1;
  Counted b;
  co_yield 2;
}

// Holds locals in its own frame, in a generator it awaits and in a Task it awaits.
Generator<int> outer_with_locals(Signal never) {
  Counted local;
  auto inner = inner_with_locals();
  while (auto v = co_await inner.next()) co_yield *v;
  Counted after;
  co_yield co_await holds_a_counted_then_waits(never.future());
}

Task<void> take_two(Generator<int>& gen) {
  EXPECT_EQ(co_await gen.next(), std::optional<int>(1));
  EXPECT_EQ(co_await gen.next(), std::optional<int>(2));
}

TEST(Generator, DroppedAtAYieldDestroysEveryLocalOnce) {
  Counted::made = Counted::destroyed = 0;
  {
    auto gen = outer_with_locals(Signal());
    spool::block_on(take_two(gen));
    EXPECT_EQ(Counted::made, 3);  // local, a, b
    EXPECT_EQ(Counted::destroyed, 0);
  }
  EXPECT_EQ(Counted::destroyed, Counted::made);
}

TEST(Generator, DroppedWhileWaitingInAnAwaitedTaskDestroysEveryLocalOnce) {
  Counted::made = Counted::destroyed = 0;
  {
    auto gen = outer_with_locals(Signal());
    spool::block_on(take_two(gen));
    // The third value waits in holds_a_counted_then_waits, which never completes.
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    EXPECT_TRUE(gen.poll_next(cx).is_pending());
    EXPECT_EQ(Counted::made, 5);  // local, a, b, after, held
  }
  EXPECT_EQ(Counted::destroyed, 5);
}

Task<void> owns_and_drains(Signal never) {
  auto gen = outer_with_locals(never);
  while (auto v = co_await gen.next()) {
  }
}

TEST(Generator, AnOwningConsumerDroppedWhileItWaitsInAnAwaitedTaskDestroysEveryLocalOnce) {
  Counted::made = Counted::destroyed = 0;
  {
    auto consumer = owns_and_drains(Signal());
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    // Runs the generator in the consumer's chain up to holds_a_counted_then_waits.
    EXPECT_TRUE(consumer.poll(cx).is_pending());
    EXPECT_EQ(Counted::made, 5);  // local, a, b, after, held
  }  // the awaiter goes first (the generator is abandoned), then the generator's frame
  EXPECT_EQ(Counted::destroyed, 5);
}

Generator<int> waits_for(Signal s, int value) {
  co_await s.future();
  co_yield value;
}

TEST(Generator, APendingPollNextGoesOnWhereItStopped) {
  Signal s;
  auto gen = waits_for(s, 7);
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  {
    auto next = gen.next();
    EXPECT_TRUE(next.poll(cx).is_pending());
  }  // the future of that next() is dropped; the generator keeps its place
  EXPECT_TRUE(gen.poll_next(cx).is_pending());
  s.fire();
  auto v = gen.poll_next(cx);
  ASSERT_TRUE(v.is_ready());
  EXPECT_EQ(v.value(), std::optional<int>(7));
  auto end = gen.poll_next(cx);
  ASSERT_TRUE(end.is_ready());
  EXPECT_EQ(end.value(), std::nullopt);
}

Task<std::optional<int>> await_next(Generator<int>& gen) { co_return co_await gen.next(); }

// A generator that lives apart from its consumer and is destroyed while the consumer's
// co_await of next() runs it: the consumer's chain would resume a freed frame.
TEST(GeneratorDeathTest, DestroyedUnderAnAwaitingConsumerAbortsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Signal never;
        auto gen = std::make_unique<Generator<int>>(waits_for(never, 1));
        auto consumer = await_next(*gen);
        spool::Waker w = spool::Waker::noop();
        spool::Context cx(w);
        (void)consumer.poll(cx);  // pending inside the generator
        gen.reset();
      },
      "spool::Generator destroyed while a co_await of its next\\(\\) is pending");
  // The same when the co_await polls a generator that a dropped poll_next left pending: the
  // consumer's chain would poll the freed promise as its leaf.
  EXPECT_DEATH(
      {
        Signal never;
        auto gen = std::make_unique<Generator<int>>(waits_for(never, 1));
        spool::Waker w = spool::Waker::noop();
        spool::Context cx(w);
        (void)gen->poll_next(cx);
        auto consumer = await_next(*gen);
        (void)consumer.poll(cx);  // waits on the generator as its leaf
        gen.reset();
      },
      "spool::Generator destroyed while a co_await of its next\\(\\) is pending");
}

TEST(Generator, AwaitingNextAfterADroppedPollNextGoesOnAsALeaf) {
  Signal s;
  auto gen = waits_for(s, 7);
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  EXPECT_TRUE(gen.poll_next(cx).is_pending());  // as when a timeout on next() expires
  {
    auto consumer = await_next(gen);
    EXPECT_TRUE(consumer.poll(cx).is_pending());  // waits on the generator as its leaf
  }  // a consumer dropped while it waits there leaves the generator able to go on
  auto consumer = await_next(gen);
  EXPECT_TRUE(consumer.poll(cx).is_pending());
  // One consumer at a time: a poll_next while that co_await waits on the generator throws.
  EXPECT_NE(logic_error_of([&] { (void)gen.poll_next(cx); }).find("has not completed"),
            std::string::npos);
  s.fire();
  auto v = consumer.poll(cx);
  ASSERT_TRUE(v.is_ready());
  EXPECT_EQ(v.value(), std::optional<int>(7));
  EXPECT_EQ(spool::block_on(await_next(gen)), std::nullopt);  // and it ends in the chain
}

Generator<int> throws_after_signal(Signal s) {
  co_await s.future();
  throw std::runtime_error("boom after the signal");
}

TEST(Generator, AnExceptionReachesAnAwaitAfterADroppedPollNext) {
  Signal s;
  auto gen = throws_after_signal(s);
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  EXPECT_TRUE(gen.poll_next(cx).is_pending());
  auto consumer = await_next(gen);
  EXPECT_TRUE(consumer.poll(cx).is_pending());
  s.fire();
  EXPECT_THROW((void)consumer.poll(cx), std::runtime_error);  // from the leaf's poll
}

TEST(Generator, AGeneratorAwaitingItsOwnNextGetsAClearError) {
  Generator<int> gen;
  auto self_awaiting = [](Generator<int>* self) -> Generator<int> {
    co_yield *co_await self->next();
  };
  gen = self_awaiting(&gen);
  EXPECT_NE(logic_error_of([&] { spool::block_on(gen.next()); }).find("has not completed"),
            std::string::npos);
}

TEST(Generator, AGeneratorPollingItsOwnNextGetsAClearError) {
  Generator<int> gen;
  // spool::timeout polls the next() it wraps: a poll_next inside the generator's own run
  // (unchecked, it found nothing to run and said pending: the generator waited on itself).
  auto self_polling = [](Generator<int>* self) -> Generator<int> {
    (void)co_await spool::timeout(std::chrono::hours(1), self->next());
    co_yield 1;
  };
  gen = self_polling(&gen);
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  EXPECT_NE(logic_error_of([&] { (void)gen.poll_next(cx); }).find("has not completed"),
            std::string::npos);
}

TEST(Generator, AnAbandonedAwaitLeavesAGeneratorThatRefusesToGoOn) {
  Signal s;
  auto gen = waits_for(s, 7);
  {
    auto consumer = await_next(gen);
    spool::Waker w = spool::Waker::noop();
    spool::Context cx(w);
    EXPECT_TRUE(consumer.poll(cx).is_pending());
  }  // the consumer is destroyed while the generator waits inside its co_await
  EXPECT_NE(logic_error_of([&] { spool::block_on(gen.next()); }).find("was destroyed"),
            std::string::npos);
}

// The frame address of a plain function: how deep the stack is where it is called.
[[gnu::noinline]] std::uintptr_t stack_depth_marker() {
  return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}

std::uintptr_t innermost_stack = 0;

Task<std::optional<int>> pull(Generator<int>& gen) { co_return co_await gen.next(); }

// depth 0 yields 1 and 2; every level above takes its values through a Task that awaits the
// level below, and yields them plus one.
Generator<int> nest(int depth) {
  if (depth == 0) {
    innermost_stack = stack_depth_marker();
    co_yield 1;
    co_yield 2;
    co_return;
  }
  auto inner = nest(depth - 1);
  while (auto v = co_await pull(inner)) co_yield *v + 1;
}

Task<std::vector<int>> drain_and_mark(Generator<int> gen, std::uintptr_t* consumer_stack) {
  *consumer_stack = stack_depth_marker();
  std::vector<int> out;
  while (auto v = co_await gen.next()) out.push_back(*v);
  co_return out;
}

TEST(Generator, NestingAHundredThousandDeepDoesNotGrowTheStack) {
  constexpr int depth = 100'000;
  std::uintptr_t consumer_stack = 0;
  auto got = spool::block_on(drain_and_mark(nest(depth), &consumer_stack));
  EXPECT_EQ(got, (std::vector<int>{1 + depth, 2 + depth}));
  // 2 × 10^5 nested coroutines: any stack use per level would be megabytes apart.
  const auto apart = innermost_stack > consumer_stack ? innermost_stack - consumer_stack
                                                      : consumer_stack - innermost_stack;
  EXPECT_LT(apart, 16u * 1024u);
}

Generator<int> rethrows_inner() {
  auto inner = throws_after(2);
  while (auto v = co_await inner.next()) co_yield *v * 10;
}

TEST(Generator, ExceptionsCrossNestedGenerators) {
  auto gen = rethrows_inner();
  EXPECT_EQ(spool::block_on(gen.next()), std::optional<int>(0));
  EXPECT_EQ(spool::block_on(gen.next()), std::optional<int>(10));
  EXPECT_THROW(spool::block_on(gen.next()), std::runtime_error);
}

}  // namespace
