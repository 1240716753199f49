// Misuse of objects in the wrong state is a clear error: a moved-from Runtime, Handle or
// JoinHandle, too many workers, a Context over a temporary Waker.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "spool/spool.hpp"
#include "support/rt_tasks.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Builder;
using spool::Runtime;
using spool::Task;

using spool_rt_test::value;

template <class Fn>
std::string logic_error_of(Fn fn) {
  try {
    fn();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "no std::logic_error";
}

bool says_moved_from(const std::string& what) {
  return what.find("moved from") != std::string::npos;
}

TEST(MisuseState, AMovedFromRuntimeThrowsOnEveryUse) {
  Runtime from = Builder::multi_thread().worker_threads(1).build();
  Runtime to = std::move(from);
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { (void)from.spawn(value(1)); })));
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { (void)from.block_on(value(1)); })));
  EXPECT_TRUE(
      says_moved_from(logic_error_of([&] { (void)from.spawn_blocking([] { return 1; }); })));
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { (void)from.handle(); })));
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { (void)from.metrics(); })));
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { (void)from.dump(); })));
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { from.shutdown_timeout(1s); })));
  EXPECT_EQ(to.block_on(value(2)), 2);  // the runtime itself lives on in `to`
}

TEST(MisuseState, AMovedFromHandleThrowsOnEveryUse) {
  Runtime rt = Builder::multi_thread().worker_threads(1).build();
  spool::Handle from = rt.handle();
  spool::Handle to = std::move(from);
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { (void)from.spawn(value(1)); })));
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { (void)from.block_on(value(1)); })));
  EXPECT_TRUE(
      says_moved_from(logic_error_of([&] { (void)from.spawn_blocking([] { return 1; }); })));
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { (void)from.metrics(); })));
  EXPECT_TRUE(says_moved_from(logic_error_of([&] { (void)from.dump(); })));
  EXPECT_EQ(to.block_on(value(2)), 2);
}

TEST(MisuseState, AMovedFromJoinHandleThrowsWhenPolledAndIsInertOtherwise) {
  Runtime rt = Builder::multi_thread().worker_threads(1).build();
  auto from = rt.spawn(value(3));
  auto to = std::move(from);
  std::string what = logic_error_of([&] { (void)rt.block_on(std::move(from)); });
  EXPECT_NE(what.find("moved from"), std::string::npos) << what;
  from.abort();  // no effect
  EXPECT_TRUE(from.is_finished());
  EXPECT_EQ(from.id(), 0u);
  EXPECT_EQ(rt.block_on(std::move(to)), 3);
}

TEST(MisuseState, MoreWorkerThreadsThanTheIdleWordCountsAreRefused) {
  std::string what;
  try {
    (void)Builder::multi_thread().worker_threads(70000).build();
  } catch (const std::invalid_argument& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("at most 65535"), std::string::npos) << what;
}

// A Context keeps a pointer to its Waker, so building one over a temporary is refused at
// compile time.
static_assert(!std::is_constructible_v<spool::Context, spool::Waker&&>);
static_assert(!std::is_constructible_v<spool::Context, spool::Waker&&, spool::ReactorSlot*>);
static_assert(!std::is_constructible_v<spool::Context, spool::Waker&&, const spool::Context&>);
static_assert(std::is_constructible_v<spool::Context, const spool::Waker&>);

// The constructors that take internal types are not part of the public surface.
static_assert(!std::is_constructible_v<spool::JoinHandle<int>, spool::detail::TaskHeader*>);
static_assert(
    !std::is_constructible_v<spool::Handle, std::shared_ptr<spool::detail::RuntimeShared>>);

}  // namespace
