// Async backtraces: every co_await records its site, and `co_await spool::backtrace()` reads
// the chain from the asking coroutine up to the outermost, with exact file:line.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "spool/stream.hpp"
#include "support/await_site.hpp"

namespace {

using spool::Backtrace;
using spool::Task;

// Where each coroutine below awaits: set by the coroutine, read by the tests.
struct Lines {
  std::uint32_t leaf = 0, mid = 0, top = 0;
};

Task<Backtrace> leaf(Lines& at) {
  at.leaf = __LINE__ + 1;
  co_return co_await spool::backtrace();
}

Task<Backtrace> mid(Lines& at) {
  at.mid = __LINE__ + 1;
  co_return co_await leaf(at);
}

Task<Backtrace> top(Lines& at) {
  at.top = __LINE__ + 1;
  co_return co_await mid(at);
}

// The frame `s` is the co_await at `line` of this file, in `function`.
void expect_site(const spool::AwaitSite& s, std::uint32_t line, const char* function) {
  spool_backtrace_test::expect_site(s, __FILE__, line, function);
}

TEST(Backtrace, DepthOneIsTheAskingCoroutine) {
  Lines at;
  const Backtrace bt = spool::block_on(leaf(at));
  ASSERT_EQ(bt.frames.size(), 1u);
  expect_site(bt.frames[0], at.leaf, "leaf");
}

TEST(Backtrace, DepthTwoAndThreeReadInnermostFirst) {
  Lines at;
  const Backtrace two = spool::block_on(mid(at));
  ASSERT_EQ(two.frames.size(), 2u);
  expect_site(two.frames[0], at.leaf, "leaf");
  expect_site(two.frames[1], at.mid, "mid");

  const Backtrace three = spool::block_on(top(at));
  ASSERT_EQ(three.frames.size(), 3u);
  expect_site(three.frames[0], at.leaf, "leaf");
  expect_site(three.frames[1], at.mid, "mid");
  expect_site(three.frames[2], at.top, "top");
}

Task<Backtrace> nest(int depth, Lines& at) {
  if (depth == 1) {
    at.leaf = __LINE__ + 1;
    co_return co_await spool::backtrace();
  }
  at.mid = __LINE__ + 1;
  co_return co_await nest(depth - 1, at);
}

TEST(Backtrace, DepthTenHasTenFrames) {
  Lines at;
  const Backtrace bt = spool::block_on(nest(10, at));
  ASSERT_EQ(bt.frames.size(), 10u);
  expect_site(bt.frames[0], at.leaf, "nest");
  for (std::size_t i = 1; i < 10; ++i) expect_site(bt.frames[i], at.mid, "nest");
}

// Yields once before it reads the chain, so that an executor polls it again.
Task<Backtrace> leaf_after_a_yield(Lines& at) {
  co_await spool::yield_now();
  at.leaf = __LINE__ + 1;
  co_return co_await spool::backtrace();
}

Task<Backtrace> mid_after_a_yield(Lines& at) {
  at.mid = __LINE__ + 1;
  co_return co_await leaf_after_a_yield(at);
}

// What a foreign executor's waker does: counts (no runtime, no reactor behind it).
struct CountWakes {
  int wakes = 0;
  void wake() { ++wakes; }
};

// A Task polled by an executor that is not spool's (a loop over poll with a waker of its own
// and no reactor slot) reads its chain as under block_on, after a resumption too.
TEST(Backtrace, ATaskPolledByAForeignExecutorReadsItsChain) {
  Lines at;
  auto task = mid_after_a_yield(at);
  auto wakes = std::make_shared<CountWakes>();
  const spool::Waker waker = spool::Waker::from(wakes);
  spool::Context cx(waker);
  std::optional<Backtrace> bt;
  for (int polls = 0; polls < 10 && !bt; ++polls) {
    if (auto p = task.poll(cx); p.is_ready()) bt = std::move(p).value();
  }
  ASSERT_TRUE(bt.has_value());
  EXPECT_EQ(wakes->wakes, 1) << "the yield woke the foreign waker once";
  ASSERT_EQ(bt->frames.size(), 2u);
  expect_site(bt->frames[0], at.leaf, "leaf_after_a_yield");
  expect_site(bt->frames[1], at.mid, "mid_after_a_yield");
}

// After a child finished, the parent's frame reads its latest co_await, not the child's.
Task<Backtrace> after_child(Lines& at) {
  (void)co_await leaf(at);
  at.top = __LINE__ + 1;
  co_return co_await spool::backtrace();
}

TEST(Backtrace, AFinishedChildLeavesTheChain) {
  Lines at;
  const Backtrace bt = spool::block_on(after_child(at));
  ASSERT_EQ(bt.frames.size(), 1u);
  expect_site(bt.frames[0], at.top, "after_child");
}

// A spawned task's chain starts at the task: its spawner is another chain.
TEST(Backtrace, ASpawnedTaskIsItsOwnOutermost) {
  auto rt = spool::Builder::current_thread().build();
  Lines at;
  const Backtrace bt =
      rt.block_on([&]() -> Task<Backtrace> { co_return co_await rt.spawn(mid(at)); }());
  ASSERT_EQ(bt.frames.size(), 2u);
  expect_site(bt.frames[0], at.leaf, "leaf");
  expect_site(bt.frames[1], at.mid, "mid");
}

// A Generator awaited through next() is a frame of its consumer's chain.
spool::Generator<Backtrace> backtraces(Lines& at) {
  at.leaf = __LINE__ + 1;
  co_yield co_await spool::backtrace();
}

Task<Backtrace> consume(Lines& at) {
  auto gen = backtraces(at);
  at.top = __LINE__ + 1;
  std::optional<Backtrace> bt = co_await gen.next();
  co_return std::move(*bt);
}

TEST(Backtrace, AnAwaitedGeneratorIsAFrame) {
  Lines at;
  const Backtrace bt = spool::block_on(consume(at));
  ASSERT_EQ(bt.frames.size(), 2u);
  expect_site(bt.frames[0], at.leaf, "backtraces");
  expect_site(bt.frames[1], at.top, "consume");
}

TEST(Backtrace, ToStringPrintsOneLinePerFrame) {
  Lines at;
  const Backtrace bt = spool::block_on(mid(at));
  ASSERT_EQ(bt.frames.size(), 2u);
  std::string want;
  for (const spool::AwaitSite& f : bt.frames) {
    want +=
        "  at " + std::string(f.file) + ":" + std::to_string(f.line) + " in " + f.function + "\n";
  }
  EXPECT_EQ(bt.to_string(), want);
}

// Branches (a chain waiting on when_all / when_any) print under their own line, indented,
// with what they wait on when it is known.
TEST(Backtrace, ToStringIndentsEachBranchUnderItsLine) {
  Backtrace bt;
  bt.frames.push_back({"a.cpp", 3, "f()"});
  spool::BacktraceBranch& b = bt.branches.emplace_back();
  b.index = 1;
  b.waiting_on = "Leaf";
  b.backtrace.frames.push_back({"b.cpp", 7, "g()"});
  spool::BacktraceBranch& inner = b.backtrace.branches.emplace_back();
  inner.backtrace.frames.push_back({"c.cpp", 9, "h()"});
  b.backtrace.omitted_branches = 2;
  EXPECT_EQ(bt.to_string(),
            "  at a.cpp:3 in f()\n"
            "  branch 1, waiting on Leaf:\n"
            "    at b.cpp:7 in g()\n"
            "    branch 0:\n"
            "      at c.cpp:9 in h()\n"
            "    (2 more branches not listed)\n");
}

}  // namespace
