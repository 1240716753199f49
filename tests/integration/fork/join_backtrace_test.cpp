// Async backtraces of spool::join's children: the chain of a child the joining task runs
// goes on into the coroutine that awaits the join, for join, join_all and a ForkGroup; a
// stolen child runs as a task of its own, whose chain ends at itself; a join that outlives
// the coroutine that awaited it leads there no more.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/await_site.hpp"
#include "support/futures.hpp"

namespace {

using spool::Backtrace;
using spool::Task;

// Where the coroutines below await: set by them, read by the tests (child's, a constant:
// children run on several threads at once).
struct Lines {
  std::uint32_t parent = 0, outer = 0;
};

// The frame `s` is the co_await at `line` of this file, in `function`.
void expect_site(const spool::AwaitSite& s, std::uint32_t line, const char* function) {
  spool_backtrace_test::expect_site(s, __FILE__, line, function);
}

// A child that reports its backtrace and the thread it ran on.
struct Seen {
  Backtrace backtrace;
  std::thread::id thread;
};

constexpr std::uint32_t kChildLine = __LINE__ + 2;  // child's co_await
Task<Seen> child() {
  Backtrace bt = co_await spool::backtrace();
  co_return Seen{std::move(bt), std::this_thread::get_id()};
}

Task<std::tuple<Seen, Seen>> join_two(Lines& at) {
  at.parent = __LINE__ + 1;
  co_return co_await spool::join(child(), child());
}

Task<std::tuple<Seen, Seen>> outer(Lines& at) {
  at.outer = __LINE__ + 1;
  co_return co_await join_two(at);
}

void expect_child_of_join_two(const Seen& s, const Lines& at) {
  ASSERT_EQ(s.backtrace.frames.size(), 3u);
  expect_site(s.backtrace.frames[0], kChildLine, "child");
  expect_site(s.backtrace.frames[1], at.parent, "join_two");
  expect_site(s.backtrace.frames[2], at.outer, "outer");
}

TEST(JoinBacktrace, InlineChildrenContinueIntoTheAwaitingChain) {
  Lines at;
  const auto [a, b] = spool::block_on(outer(at));
  expect_child_of_join_two(a, at);
  expect_child_of_join_two(b, at);
}

// Child 0 hands the worker over (block_in_place): child 1 becomes a task of its own on
// another thread, whose chain ends at itself (the parent's chain is another thread's).
Task<Seen> hand_over() {
  spool::block_in_place([] {});
  co_return co_await child();
}

Task<std::tuple<Seen, Seen>> join_stolen(Lines& at) {
  at.parent = __LINE__ + 1;
  co_return co_await spool::join(hand_over(), child());
}

TEST(JoinBacktrace, AStolenChildsChainEndsAtItself) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  Lines at;
  const auto [handed, stolen] = rt.block_on(rt.spawn(join_stolen(at)));
  EXPECT_NE(stolen.thread, handed.thread);
  ASSERT_EQ(stolen.backtrace.frames.size(), 1u);
  expect_site(stolen.backtrace.frames[0], kChildLine, "child");
  ASSERT_EQ(handed.backtrace.frames.size(), 3u);  // child, hand_over, join_stolen
  expect_site(handed.backtrace.frames[2], at.parent, "join_stolen");
}

Task<std::vector<Seen>> join_all_two(Lines& at) {
  std::vector<Task<Seen>> children;
  children.push_back(child());
  children.push_back(child());
  at.parent = __LINE__ + 1;
  co_return co_await spool::join_all(std::move(children));
}

Task<std::vector<Backtrace>> group_of_two(Lines& at) {
  spool::ForkGroup<Seen, 2> group;
  group.fork(child());
  group.fork(child());
  at.parent = __LINE__ + 1;
  auto seen = co_await group.join();
  std::vector<Backtrace> out;
  for (Seen& s : seen) out.push_back(std::move(s.backtrace));
  co_return out;
}

TEST(JoinBacktrace, JoinAllAndAForkGroupToo) {
  Lines at;
  for (const Seen& s : spool::block_on(join_all_two(at))) {
    ASSERT_EQ(s.backtrace.frames.size(), 2u);
    expect_site(s.backtrace.frames[1], at.parent, "join_all_two");
  }
  for (const Backtrace& bt : spool::block_on(group_of_two(at))) {
    ASSERT_EQ(bt.frames.size(), 2u);
    expect_site(bt.frames[1], at.parent, "group_of_two");
  }
}

// A join awaited as an lvalue is linked as long as the co_await lasts.
Task<std::tuple<Seen>> join_lvalue(Lines& at) {
  auto join = spool::join(child());
  at.parent = __LINE__ + 1;
  co_return co_await join;
}

TEST(JoinBacktrace, AJoinAwaitedAsAnLvalueIsLinkedToo) {
  Lines at;
  const auto [s] = spool::block_on(join_lvalue(at));
  ASSERT_EQ(s.backtrace.frames.size(), 2u);
  expect_site(s.backtrace.frames[0], kChildLine, "child");
  expect_site(s.backtrace.frames[1], at.parent, "join_lvalue");
}

Task<Seen> child_after_a_yield() {
  co_await spool_test::YieldNow();
  co_return co_await child();
}

// The Task that awaited it is destroyed mid-join: polled on by another poller, its children
// no longer lead into that Task's (freed) frame.
TEST(JoinBacktrace, AJoinThatOutlivesItsAwaiterIsUnlinked) {
  auto join = spool::join(child_after_a_yield());
  {
    Task<void> awaiting = [](auto& j) -> Task<void> { (void)co_await j; }(join);
    const spool::Waker noop = spool::Waker::noop();
    spool::Context cx(noop);
    ASSERT_TRUE(awaiting.poll(cx).is_pending());  // the child yielded once
  }
  const auto [s] = spool::block_on(join);    // polled in place (it must not move now)
  ASSERT_EQ(s.backtrace.frames.size(), 2u);  // child, child_after_a_yield: no more
  expect_site(s.backtrace.frames[0], kChildLine, "child");
}

}  // namespace
