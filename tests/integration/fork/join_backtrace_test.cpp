// Async backtraces of spool::join's children: a child's chain goes on into the coroutine
// that awaits the join, whether the child runs inline or was stolen by another worker, for
// join, join_all and a ForkGroup; a join awaited as an lvalue links nowhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/await_site.hpp"

namespace {

using spool::Backtrace;
using spool::Task;

// Where the coroutines below await: set by them, read by the tests.
struct Lines {
  std::uint32_t child = 0, parent = 0, outer = 0;
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

Task<Seen> child(Lines& at) {
  at.child = __LINE__ + 1;
  Backtrace bt = co_await spool::backtrace();
  co_return Seen{std::move(bt), std::this_thread::get_id()};
}

Task<std::tuple<Seen, Seen>> join_two(Lines& at) {
  at.parent = __LINE__ + 1;
  co_return co_await spool::join(child(at), child(at));
}

Task<std::tuple<Seen, Seen>> outer(Lines& at) {
  at.outer = __LINE__ + 1;
  co_return co_await join_two(at);
}

void expect_child_of_join_two(const Seen& s, const Lines& at) {
  ASSERT_EQ(s.backtrace.frames.size(), 3u);
  expect_site(s.backtrace.frames[0], at.child, "child");
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
// another thread, and its chain still goes on into the parent.
Task<Seen> hand_over(Lines& at) {
  spool::block_in_place([] {});
  co_return co_await child(at);
}

Task<std::tuple<Seen, Seen>> join_stolen(Lines& at) {
  at.parent = __LINE__ + 1;
  co_return co_await spool::join(hand_over(at), child(at));
}

TEST(JoinBacktrace, AStolenChildContinuesIntoTheAwaitingChain) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  Lines at;
  const auto [handed, stolen] = rt.block_on(rt.spawn(join_stolen(at)));
  EXPECT_NE(stolen.thread, handed.thread);
  ASSERT_EQ(stolen.backtrace.frames.size(), 2u);
  expect_site(stolen.backtrace.frames[0], at.child, "child");
  expect_site(stolen.backtrace.frames[1], at.parent, "join_stolen");
  ASSERT_EQ(handed.backtrace.frames.size(), 3u);  // child, hand_over, join_stolen
  expect_site(handed.backtrace.frames[2], at.parent, "join_stolen");
}

Task<std::vector<Seen>> join_all_two(Lines& at) {
  std::vector<Task<Seen>> children;
  children.push_back(child(at));
  children.push_back(child(at));
  at.parent = __LINE__ + 1;
  co_return co_await spool::join_all(std::move(children));
}

Task<std::vector<Backtrace>> group_of_two(Lines& at) {
  spool::ForkGroup<Seen, 2> group;
  group.fork(child(at));
  group.fork(child(at));
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

// A join awaited as an lvalue may outlive the awaiting coroutine, with stolen children still
// running: it is not linked, and its children's chains end at themselves.
Task<std::tuple<Seen>> join_lvalue(Lines& at) {
  auto join = spool::join(child(at));
  co_return co_await join;
}

TEST(JoinBacktrace, AJoinAwaitedAsAnLvalueLinksNowhere) {
  Lines at;
  const auto [s] = spool::block_on(join_lvalue(at));
  ASSERT_EQ(s.backtrace.frames.size(), 1u);
  expect_site(s.backtrace.frames[0], at.child, "child");
}

}  // namespace
