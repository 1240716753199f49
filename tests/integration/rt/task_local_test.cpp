// spool::TaskLocal: a value set by scope() and read by get() across co_await, in nested
// scopes, in when_all's branches, spool::scope's children, join's children (inline and
// spawned apart, as a stolen child runs), tasks moving between workers (each its own value),
// a throwing poll restoring the chain; absent in a plain spawn unless passed with inherit();
// the misuses' errors.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"

namespace {

using spool::Task;

const spool::TaskLocal<std::string> request_id;
const spool::TaskLocal<int> depth;

Task<std::string> id_after_yields(int yields) {
  for (int i = 0; i < yields; ++i) co_await spool::yield_now();
  co_return request_id.get();
}

Task<int> depth_after_yield() {
  co_await spool::yield_now();
  co_return depth.get();
}

std::string seen_or_none() {
  const std::string* v = request_id.try_get();
  return v != nullptr ? *v : "none";
}

TEST(TaskLocal, SetForAFutureAndWhatItAwaitsAcrossSuspensions) {
  auto rt = spool::Builder::current_thread().build();
  EXPECT_EQ(rt.block_on(request_id.scope("r1", id_after_yields(3))), "r1");
  EXPECT_EQ(request_id.try_get(), nullptr);  // gone once the scope's poll returned
}

TEST(TaskLocal, GetWithoutAScopeThrowsAndSaysWhatToDo) {
  auto rt = spool::Builder::current_thread().build();
  try {
    rt.block_on(id_after_yields(0));
    ADD_FAILURE() << "get() without a scope returned";
  } catch (const spool::TaskLocalUnset& e) {
    EXPECT_NE(std::string(e.what()).find("local.scope(value, future)"), std::string::npos)
        << e.what();
  }
}

TEST(TaskLocal, InnerScopesShadowOuterOnesAndOtherLocalsStay) {
  auto rt = spool::Builder::current_thread().build();
  auto body = []() -> Task<std::string> {
    const std::string inner = co_await request_id.scope("inner", id_after_yields(1));
    co_return inner + "/" + std::to_string(depth.get()) + "/" + request_id.get();
  };
  EXPECT_EQ(rt.block_on(depth.scope(7, request_id.scope("outer", body()))), "inner/7/outer");
}

TEST(TaskLocal, WhenAllBranchesSeeIt) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto [a, b] =
      rt.block_on(request_id.scope("w", spool::when_all(id_after_yields(2), id_after_yields(5))));
  EXPECT_EQ(a, "w");
  EXPECT_EQ(b, "w");
}

TEST(TaskLocal, ScopeChildrenSeeTheValuesWhereTheScopeIsAwaited) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  // Counts the children that saw "s": each adds from its worker (seq_cst fetch_add); read
  // (seq_cst load) after block_on returned, which the scope's wait for every child orders.
  std::atomic<int> right{0};
  rt.block_on(request_id.scope("s", spool::scope([&](spool::Scope& s) -> Task<void> {
                                 for (int i = 0; i < 8; ++i) {
                                   s.spawn([](std::atomic<int>& ok) -> Task<void> {
                                     if (co_await id_after_yields(2) == "s") ok.fetch_add(1);
                                   }(right));
                                 }
                                 co_return;
                               })));
  EXPECT_EQ(right.load(), 8);
}

TEST(TaskLocal, JoinChildrenSeeItInlineAndWhenTheyRunApart) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  // From block_on's thread (no worker core) the children after the first are spawned as
  // tasks of their own, as a stolen child runs.
  auto [a, b, c] = rt.block_on(request_id.scope(
      "j", spool::join(id_after_yields(1), id_after_yields(1), id_after_yields(3))));
  EXPECT_EQ(a + b + c, "jjj");
  // From a worker: inline or stolen, whichever happens.
  auto nested = rt.block_on(rt.spawn(request_id.scope("k", []() -> Task<std::string> {
    auto [x, y] = co_await spool::join(id_after_yields(2), id_after_yields(2));
    co_return x + y;
  }())));
  EXPECT_EQ(nested, "kk");
}

// The thread running the caller now, never one cached from before a co_await (glibc
// declares pthread_self const; the barrier keeps the compiler from reusing a result).
[[gnu::noinline]] std::thread::id running_thread() {
  asm volatile("" ::: "memory");
  return std::this_thread::get_id();
}

struct Migration {
  int wrong = 0;  // get() gave another task's value
  int moves = 0;  // resumed on another thread than the last poll
};

Task<Migration> check_depth_across_yields(int expected, int yields) {
  Migration seen;
  std::thread::id last = running_thread();
  for (int i = 0; i < yields; ++i) {
    // A hand-off of the worker's core now and then: the next poll runs on another thread
    // for certain, however the two workers share the tasks (a steal may not come).
    if (i % 1'000 == 999) spool::block_in_place([] {});
    co_await spool::yield_now();  // may resume on the other worker
    seen.wrong += depth.get() != expected;
    const std::thread::id now = running_thread();
    seen.moves += now != last;
    last = now;
  }
  co_return seen;
}

// Eight tasks, each with its own value, on two workers: each reads its own after every
// resumption, wherever it resumed (clang <= 15 could reuse a thread_local's address from
// before a co_await: another thread's chain, llvm/llvm-project#47179).
TEST(TaskLocal, TasksMovingBetweenWorkersEachKeepTheirOwn) {
  constexpr int kTasks = 8;
  constexpr int kYields = 10'000;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::vector<spool::JoinHandle<Migration>> tasks;
  for (int id = 0; id < kTasks; ++id) {
    tasks.push_back(rt.spawn(depth.scope(id, check_depth_across_yields(id, kYields))));
  }
  int moves = 0;
  for (auto& task : tasks) {
    const Migration seen = rt.block_on(std::move(task));
    EXPECT_EQ(seen.wrong, 0);
    moves += seen.moves;
  }
  EXPECT_GT(moves, 0) << "no task moved between workers: the test checked nothing";
}

TEST(TaskLocal, APollThatThrowsRestoresTheChain) {
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  auto outer = request_id.scope(
      "outer", spool::poll_fn([](spool::Context& c) {
        auto throwing = depth.scope(1, spool::poll_fn([](spool::Context&) -> spool::Poll<int> {
                                      throw std::runtime_error("the inner future failed");
                                    }));
        EXPECT_THROW((void)throwing.poll(c), std::runtime_error);
        return spool::Poll<bool>::ready(depth.try_get() == nullptr && request_id.get() == "outer");
      }));
  const spool::Poll<bool> restored = outer.poll(cx);
  ASSERT_TRUE(restored.is_ready());
  EXPECT_TRUE(restored.value());
  EXPECT_EQ(request_id.try_get(), nullptr);
}

TEST(TaskLocal, APlainSpawnDoesNotInheritItAndInheritPassesACopy) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto seen = rt.block_on(request_id.scope("p", []() -> Task<std::string> {
    auto plain = spool::spawn([]() -> Task<std::string> { co_return seen_or_none(); }());
    auto inherited =
        spool::spawn(request_id.inherit([]() -> Task<std::string> { co_return seen_or_none(); }()));
    co_return (co_await plain) + "," + (co_await inherited);
  }()));
  EXPECT_EQ(seen, "none,p");
}

TEST(TaskLocal, MovingAPolledScopeThrows) {
  auto scoped = request_id.scope("x", id_after_yields(1));
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  EXPECT_TRUE(scoped.poll(cx).is_pending());
  EXPECT_THROW((void)decltype(scoped)(std::move(scoped)), std::logic_error);
}

TEST(TaskLocal, AScopePolledUnderOtherScopesThanAtItsFirstPollThrows) {
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  auto scoped = depth.scope(1, depth_after_yield());
  {
    // First polled by reference inside a shorter-lived scope, as a poll_fn may do.
    auto outer = request_id.scope(
        "short", spool::poll_fn([&](spool::Context& c) { return scoped.poll(c); }));
    EXPECT_TRUE(outer.poll(cx).is_pending());
  }
  try {
    (void)scoped.poll(cx);
    ADD_FAILURE() << "a poll under other scopes than the first went on";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("other scopes than at its first poll"), std::string::npos)
        << e.what();
  }
}

// Polls `f` first by reference inside a shorter-lived TaskLocal scope, then outside it: the
// second poll must throw the other-scopes logic_error (`what` names f in the failure).
template <class F>
void expect_refused_under_other_scopes(F& f, const char* what) {
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  {
    auto outer = depth.scope(1, spool::poll_fn([&](spool::Context& c) { return f.poll(c); }));
    EXPECT_TRUE(outer.poll(cx).is_pending());
  }
  try {
    (void)f.poll(cx);
    ADD_FAILURE() << what << " polled under other scopes than the first went on";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("other TaskLocal scopes than at its first poll"),
              std::string::npos)
        << e.what();
  }
}

// The same for a join of two or more children: its stolen children read the scopes of its
// first poll (it asserted, which a release build skipped).
TEST(TaskLocal, AJoinPolledUnderOtherScopesThanAtItsFirstPollThrows) {
  auto join = spool::join(depth_after_yield(), depth_after_yield());
  expect_refused_under_other_scopes(join, "a join");
}

// The same for a spool::scope, whose children read the scopes of its first poll too.
TEST(TaskLocal, ASpoolScopePolledUnderOtherScopesThanAtItsFirstPollThrows) {
  auto body = spool::scope([](spool::Scope&) -> Task<void> { co_await spool::yield_now(); });
  expect_refused_under_other_scopes(body, "a scope");
}

}  // namespace
