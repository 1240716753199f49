// spool::Poll<T>: ready or pending, for values, move-only types, references and void.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "spool/spool.hpp"

namespace {

TEST(Poll, Basic) {
  spool::Poll<int> p = 3;
  EXPECT_TRUE(p.is_ready());
}

TEST(Poll, ReadyValueIsReadyAndHoldsTheValue) {
  spool::Poll<int> p = 42;
  EXPECT_TRUE(p.is_ready());
  EXPECT_FALSE(p.is_pending());
  EXPECT_TRUE(static_cast<bool>(p));
  EXPECT_EQ(p.value(), 42);
  const spool::Poll<int>& cp = p;
  EXPECT_EQ(cp.value(), 42);
  EXPECT_EQ(std::move(p).value(), 42);
}

TEST(Poll, PendingFromTag) {
  spool::Poll<int> tagged = spool::pending;
  EXPECT_TRUE(tagged.is_pending());
  EXPECT_FALSE(tagged.is_ready());
  EXPECT_FALSE(static_cast<bool>(tagged));
}

// `return {};` from a poll would not say whether it means ready or pending (for Poll<int> it
// would even be a ready 0 without the deleted default constructor): it does not compile, for
// any Poll. `sink({})` is the copy-list-initialisation that `return {};` performs.
template <class P>
concept FromEmptyBraces = requires(void (*sink)(P)) {
  sink({});
};
static_assert(!FromEmptyBraces<spool::Poll<void>>);
static_assert(!FromEmptyBraces<spool::Poll<int>>);
static_assert(!FromEmptyBraces<spool::Poll<int&>>);
static_assert(!std::is_default_constructible_v<spool::Poll<void>>);
static_assert(!std::is_default_constructible_v<spool::Poll<std::string>>);
// The two spellings that do compile, each saying what it means.
static_assert(spool::Poll<void>::ready().is_ready());
static_assert(spool::Poll<void>(spool::pending).is_pending());

TEST(Poll, ReadyWithAFalsyValueIsStillReady) {
  // Ready-ness is not the value's truthiness: Poll<bool>(false) is a ready poll.
  spool::Poll<bool> p = false;
  EXPECT_TRUE(p.is_ready());
  EXPECT_FALSE(p.value());
  spool::Poll<int> zero = 0;
  EXPECT_TRUE(zero.is_ready());
}

TEST(Poll, ReadyBuildsInPlace) {
  auto p = spool::Poll<std::string>::ready(3, 'x');
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(p.value(), "xxx");
  auto q = spool::Poll<std::pair<int, std::string>>::ready(1, "one");
  EXPECT_EQ(q.value().first, 1);
  EXPECT_EQ(q.value().second, "one");
}

TEST(Poll, MoveOnlyValueMovesOut) {
  spool::Poll<std::unique_ptr<int>> p = std::make_unique<int>(7);
  ASSERT_TRUE(p.is_ready());
  std::unique_ptr<int> out = std::move(p).value();
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(*out, 7);
  // The Poll itself can be moved, as a future returns it.
  auto make = [] { return spool::Poll<std::unique_ptr<int>>::ready(std::make_unique<int>(8)); };
  spool::Poll<std::unique_ptr<int>> moved = make();
  EXPECT_EQ(*moved.value(), 8);
  static_assert(!std::is_copy_constructible_v<spool::Poll<std::unique_ptr<int>>>);
}

TEST(Poll, ReferenceRefersToTheOriginalObject) {
  int x = 1;
  spool::Poll<int&> p = x;
  ASSERT_TRUE(p.is_ready());
  EXPECT_EQ(&p.value(), &x);
  p.value() = 5;
  EXPECT_EQ(x, 5);
  auto r = spool::Poll<int&>::ready(x);
  EXPECT_EQ(&r.value(), &x);

  const std::string s = "s";
  spool::Poll<const std::string&> cs = s;
  EXPECT_EQ(&cs.value(), &s);

  spool::Poll<int&> pending = spool::pending;
  EXPECT_TRUE(pending.is_pending());
}

TEST(Poll, VoidReadyAndPending) {
  auto ready = spool::Poll<void>::ready();
  EXPECT_TRUE(ready.is_ready());
  EXPECT_FALSE(ready.is_pending());
  EXPECT_TRUE(static_cast<bool>(ready));
  EXPECT_NO_THROW(ready.value());

  spool::Poll<void> tagged = spool::pending;
  EXPECT_TRUE(tagged.is_pending());
  EXPECT_FALSE(tagged.is_ready());
  EXPECT_FALSE(static_cast<bool>(tagged));
}

TEST(Poll, ValueOnPendingThrowsLogicError) {
  spool::Poll<int> value = spool::pending;
  EXPECT_THROW(value.value(), std::logic_error);
  EXPECT_THROW(std::as_const(value).value(), std::logic_error);
  EXPECT_THROW(std::move(value).value(), std::logic_error);

  spool::Poll<std::unique_ptr<int>> move_only = spool::pending;
  EXPECT_THROW(std::move(move_only).value(), std::logic_error);

  spool::Poll<int&> ref = spool::pending;
  EXPECT_THROW(ref.value(), std::logic_error);

  spool::Poll<void> v = spool::pending;
  EXPECT_THROW(v.value(), std::logic_error);

  try {
    value.value();
    FAIL() << "value() on a pending Poll did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("pending"), std::string::npos) << e.what();
  }
}

TEST(Poll, IsUsableInConstantExpressions) {
  constexpr spool::Poll<int> ready(3);
  constexpr spool::Poll<int> pending(spool::pending);
  constexpr spool::Poll<void> void_ready = spool::Poll<void>::ready();
  static_assert(ready.is_ready() && ready.value() == 3);
  static_assert(pending.is_pending());
  static_assert(void_ready.is_ready() && spool::Poll<void>(spool::pending).is_pending());
  EXPECT_EQ(ready.value(), 3);
  EXPECT_TRUE(pending.is_pending());
  EXPECT_TRUE(void_ready.is_ready());
}

// `p = spool::pending` destroys the value, also for a T that cannot be move-assigned.
TEST(Poll, AssigningPendingDestroysTheValue) {
  struct NotAssignable {
    explicit NotAssignable(std::shared_ptr<int> h) : held(std::move(h)) {}
    NotAssignable(NotAssignable&&) = default;
    NotAssignable& operator=(NotAssignable&&) = delete;
    std::shared_ptr<int> held;
  };
  static_assert(!std::is_move_assignable_v<NotAssignable>);
  auto held = std::make_shared<int>(1);
  auto p = spool::Poll<NotAssignable>::ready(held);
  EXPECT_EQ(held.use_count(), 2);
  p = spool::pending;
  EXPECT_TRUE(p.is_pending());
  EXPECT_EQ(held.use_count(), 1);
}

TEST(Poll, TraitsIdentifyPollTypes) {
  static_assert(spool::is_poll_v<spool::Poll<int>>);
  static_assert(spool::is_poll_v<spool::Poll<void>>);
  static_assert(spool::is_poll_v<spool::Poll<int&>>);
  static_assert(!spool::is_poll_v<int>);
  static_assert(std::is_same_v<spool::Poll<int&>::value_type, int&>);
  static_assert(std::is_same_v<spool::Poll<void>::value_type, void>);
  // A PendingTag is not a value: Poll<int> from `pending` is pending, not ready.
  static_assert(!std::is_constructible_v<int, spool::PendingTag>);
  spool::Poll<int> from_tag = spool::pending;
  EXPECT_TRUE(from_tag.is_pending());
}

}  // namespace
