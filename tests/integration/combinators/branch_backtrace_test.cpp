// Async backtraces across combinators: a Task that is a branch of when_all / when_any awaited
// in a Task continues its chain into the awaiting coroutine, each branch its own chain, and a
// chain waiting on a combinator lists its unfinished branches.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/await_site.hpp"
#include "support/futures.hpp"
#include "support/rt_leaf.hpp"

namespace {

using spool::Backtrace;
using spool::Task;

// Where the coroutines below await: set by them, read by the tests.
struct Lines {
  std::uint32_t branch_a = 0, branch_b = 0, inner = 0, parent = 0, outer = 0;
};

// The frame `s` is the co_await at `line` of this file, in `function`.
void expect_site(const spool::AwaitSite& s, std::uint32_t line, const char* function) {
  spool_backtrace_test::expect_site(s, __FILE__, line, function);
}

Task<Backtrace> branch_a(Lines& at) {
  at.branch_a = __LINE__ + 1;
  co_return co_await spool::backtrace();
}

// Asks for its backtrace after a pending poll: the link holds across polls.
Task<Backtrace> branch_b(Lines& at) {
  co_await spool_test::YieldNow();
  at.branch_b = __LINE__ + 1;
  co_return co_await spool::backtrace();
}

Task<std::pair<Backtrace, Backtrace>> all_of_two(Lines& at) {
  at.parent = __LINE__ + 1;
  auto [a, b] = co_await spool::when_all(branch_a(at), branch_b(at));
  co_return std::pair{std::move(a), std::move(b)};
}

Task<std::pair<Backtrace, Backtrace>> outer(Lines& at) {
  at.outer = __LINE__ + 1;
  co_return co_await all_of_two(at);
}

TEST(BranchBacktrace, EachWhenAllBranchContinuesIntoTheAwaitingChain) {
  Lines at;
  const auto [a, b] = spool::block_on(outer(at));
  ASSERT_EQ(a.frames.size(), 3u);
  expect_site(a.frames[0], at.branch_a, "branch_a");
  expect_site(a.frames[1], at.parent, "all_of_two");
  expect_site(a.frames[2], at.outer, "outer");
  ASSERT_EQ(b.frames.size(), 3u);
  expect_site(b.frames[0], at.branch_b, "branch_b");
  expect_site(b.frames[1], at.parent, "all_of_two");
  expect_site(b.frames[2], at.outer, "outer");
  EXPECT_TRUE(a.branches.empty());
}

Task<Backtrace> select_first(Lines& at) {
  at.parent = __LINE__ + 1;
  auto won = co_await spool::select(branch_b(at), spool_rt_test::NeverReady{});
  co_return std::move(std::get<0>(won));
}

TEST(BranchBacktrace, ASelectBranchContinuesIntoTheAwaitingChain) {
  Lines at;
  const Backtrace bt = spool::block_on(select_first(at));
  ASSERT_EQ(bt.frames.size(), 2u);
  expect_site(bt.frames[0], at.branch_b, "branch_b");
  expect_site(bt.frames[1], at.parent, "select_first");
}

Task<std::vector<Backtrace>> all_of_vector(Lines& at) {
  std::vector<Task<Backtrace>> branches;
  branches.push_back(branch_a(at));
  branches.push_back(branch_b(at));
  at.parent = __LINE__ + 1;
  co_return co_await spool::when_all(std::move(branches));
}

TEST(BranchBacktrace, AVectorsBranchesToo) {
  Lines at;
  const std::vector<Backtrace> bts = spool::block_on(all_of_vector(at));
  ASSERT_EQ(bts.size(), 2u);
  for (const Backtrace& bt : bts) {
    ASSERT_EQ(bt.frames.size(), 2u);
    expect_site(bt.frames[1], at.parent, "all_of_vector");
  }
}

// A combinator that is itself a branch passes the link on to its own branches.
Task<Backtrace> nested(Lines& at) {
  at.parent = __LINE__ + 1;
  auto [inner] = co_await spool::when_all(spool::when_any(branch_a(at)));
  co_return std::move(std::get<0>(inner));
}

TEST(BranchBacktrace, ANestedCombinatorPassesTheLinkOn) {
  Lines at;
  const Backtrace bt = spool::block_on(nested(at));
  ASSERT_EQ(bt.frames.size(), 2u);
  expect_site(bt.frames[0], at.branch_a, "branch_a");
  expect_site(bt.frames[1], at.parent, "nested");
}

// Outside a Task (block_on of the combinator itself) a branch is its chain's outermost.
TEST(BranchBacktrace, ACombinatorNoTaskAwaitsLinksNowhere) {
  Lines at;
  auto [a, b] = spool::block_on(spool::when_all(branch_a(at), branch_b(at)));
  ASSERT_EQ(a.frames.size(), 1u);
  expect_site(a.frames[0], at.branch_a, "branch_a");
  ASSERT_EQ(b.frames.size(), 1u);
}

// A scope's body is polled by the scope's future, in the awaiting task: its chain goes on
// into the awaiting coroutine. A child it spawns is a task of its own, whose chain starts at
// itself.
Task<void> record(Lines& at, Backtrace& out) {
  at.outer = __LINE__ + 1;
  out = co_await branch_a(at);
}

Task<std::pair<Backtrace, Backtrace>> in_scope(Lines& at) {
  Backtrace child;
  auto body = [&](spool::Scope& s) -> Task<Backtrace> {
    s.spawn(record(at, child));
    at.inner = __LINE__ + 1;
    co_return co_await spool::backtrace();
  };
  at.parent = __LINE__ + 1;
  Backtrace seen = co_await spool::scope(body);
  co_return std::pair{std::move(seen), std::move(child)};
}

TEST(BranchBacktrace, AScopesBodyContinuesIntoTheAwaitingChainItsChildrenDoNot) {
  auto rt = spool::Builder::current_thread().build();
  Lines at;
  const auto [body, child] = rt.block_on(in_scope(at));
  ASSERT_EQ(body.frames.size(), 2u);
  expect_site(body.frames[0], at.inner, "");
  expect_site(body.frames[1], at.parent, "in_scope");
  // The child's own frames, then the scope's wrapper around it, where its task starts.
  ASSERT_EQ(child.frames.size(), 3u);
  expect_site(child.frames[0], at.branch_a, "branch_a");
  expect_site(child.frames[1], at.outer, "record");
#if defined(__cpp_lib_source_location)
  EXPECT_NE(std::string(child.frames[2].function).find("run_scope_child("), std::string::npos);
#endif
}

// A combinator awaited as an lvalue outlives a Task destroyed in the co_await: its branches
// no longer lead into that Task's (freed) frame when they go on under another poller.
TEST(BranchBacktrace, ACombinatorThatOutlivesItsAwaiterIsUnlinked) {
  Lines at;
  auto both = spool::when_all(branch_b(at), branch_b(at));
  {
    Task<void> awaiting = [](auto& c) -> Task<void> { (void)co_await c; }(both);
    const spool::Waker noop = spool::Waker::noop();
    spool::Context cx(noop);
    ASSERT_TRUE(awaiting.poll(cx).is_pending());  // each branch_b yielded once
  }
  auto [a, b] = spool::block_on(both);  // polled in place (it must not move now)
  ASSERT_EQ(a.frames.size(), 1u);
  expect_site(a.frames[0], at.branch_b, "branch_b");
  ASSERT_EQ(b.frames.size(), 1u);
}

// A user future whose members happen to have the hooks' names is a plain leaf: spool takes
// the hooks only from its own types, and never calls these.
struct NamedLikeTheHooks {
  int* calls;
  void link_awaiting(const void*) { ++*calls; }
  void branch_backtraces(Backtrace&) const { ++*calls; }
  spool::Poll<int> poll(spool::Context&) { return spool::Poll<int>::ready(1); }
};

TEST(BranchBacktrace, AUserFuturesMembersNamedLikeTheHooksAreNeverCalled) {
  int calls = 0;
  auto task = [](int* c) -> Task<int> { co_return co_await NamedLikeTheHooks{c}; };
  EXPECT_EQ(spool::block_on(task(&calls)), 1);
  EXPECT_EQ(calls, 0);
}

}  // namespace
