// JoinError::what(): the task's id, and for a task that threw, the what() of the innermost
// std::exception however deeply it is nested (1, 2, 3 layers, through an awaited task's own
// JoinError), or a plain statement when the cause is not a std::exception.
#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;

// Throws "root cause", wrapped `levels - 1` times by throw_with_nested("layer <n>").
[[noreturn]] void throw_nested(int levels) {
  if (levels <= 1) throw std::runtime_error("root cause");
  try {
    throw_nested(levels - 1);
  } catch (...) {
    std::throw_with_nested(std::runtime_error("layer " + std::to_string(levels)));
  }
}

// The what() of the JoinError that task `id` gives when it ends by throwing `cause`.
template <class Throw>
std::string join_error_what(std::uint64_t id, Throw throw_cause) {
  try {
    throw_cause();
  } catch (...) {
    return spool::JoinError(false, id).what();
  }
  return "the cause did not throw";
}

TEST(JoinErrorWhat, GivesTheInnermostMessageAtEveryDepth) {
  for (int levels = 1; levels <= 3; ++levels) {
    EXPECT_EQ(join_error_what(7, [levels] { throw_nested(levels); }),
              "spool: task 7 threw an exception: root cause")
        << levels << " levels";
  }
}

TEST(JoinErrorWhat, SaysSoWhenTheCauseIsNotAStdException) {
  EXPECT_EQ(join_error_what(3, [] { throw 42; }),
            "spool: task 3 threw an exception not derived from std::exception");
}

// The innermost layer has no message: the deepest one that has is the best there is.
TEST(JoinErrorWhat, AnInnermostNonStdCauseGivesTheDeepestMessage) {
  auto wrapped_int = [] {
    try {
      throw 42;
    } catch (...) {
      std::throw_with_nested(std::runtime_error("while parsing"));
    }
  };
  EXPECT_EQ(join_error_what(4, wrapped_int), "spool: task 4 threw an exception: while parsing");
}

TEST(JoinErrorWhat, NamesACancelledTask) {
  spool::JoinError e(true, 9);
  EXPECT_STREQ(e.what(), "spool: task 9 was cancelled");
  EXPECT_EQ(e.exception(), nullptr);
}

class JoinErrorAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(JoinErrorAnyFlavor);

Task<int> throws_nested_task(int levels) {
  throw_nested(levels);
  co_return 0;
}
Task<int> awaits(spool::JoinHandle<int> other) { co_return co_await other; }

// The outer task awaits the inner one, which threw two layers: the outer JoinError holds
// the inner JoinError, which holds both layers. Its message names the outer task and the
// root cause, four layers down.
TEST_P(JoinErrorAnyFlavor, TheRootCauseShowsThroughAnAwaitedTask) {
  auto rt = build();
  auto outer = rt.spawn(awaits(rt.spawn(throws_nested_task(2))));
  std::string expected =
      "spool: task " + std::to_string(outer.id()) + " threw an exception: root cause";
  try {
    wait(rt, outer);
    FAIL() << "expected JoinError";
  } catch (const spool::JoinError& e) {
    EXPECT_EQ(e.what(), expected);
    EXPECT_TRUE(e.is_exception());
    EXPECT_THROW(std::rethrow_if_nested(e), spool::JoinError);  // the inner task's
  }
}

}  // namespace
