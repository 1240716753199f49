// spool::scope: children borrow the awaiting frame (a thousand of them, ASan clean), the
// body's value, nested spawns, the first exception (a child's or the body's) cancels the
// rest and is rethrown after they are gone, a scope destroyed early cancels its children
// and waits (also for a child being polled on another worker), runtime shutdown while a
// scope waits, the scope under any executor, and misuse.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <latch>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"
#include "support/rt_drop_counter.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_gate.hpp"
#include "support/time_helpers.hpp"

namespace spool_comb_test {
namespace {

using spool::Scope;
using spool_rt_test::DropCounter;
using spool_rt_test::Gate;
using spool_rt_test::NeverReady;
// Destructions counted by DropCounter (its protocol: seq_cst adds, read after the scope or
// the runtime that destroyed the counted objects is done).
using Drops = std::atomic<std::int64_t>;

class ScopeAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(ScopeAnyFlavor);

constexpr int kBorrowers = 1000;

// Yields once, so that it is still running when the body returns, then writes its slot.
Task<void> write_later(int* slot, int v) {
  co_await spool::yield_now();
  *slot = v;
}

Task<std::int64_t> fill_borrowed_array() {
  std::array<int, kBorrowers> values{};  // in this frame, borrowed by every child
  co_await spool::scope([&](Scope& s) -> Task<void> {
    for (int i = 0; i < kBorrowers; ++i) s.spawn(write_later(&values[i], 2 * i));
    co_return;
  });
  std::int64_t sum = 0;
  for (int v : values) sum += v;
  co_return sum;
}

TEST_P(ScopeAnyFlavor, AThousandChildrenBorrowALocalArray) {
  auto rt = build();
  EXPECT_EQ(wait(rt, rt.spawn(fill_borrowed_array())), std::int64_t{kBorrowers} * (kBorrowers - 1));
}

// Spawns two more nodes into the same scope (from a child, on any worker) until depth 0,
// then counts itself after a yield: the deeper nodes finish after their spawner did.
Task<void> tree_node(Scope& s, std::atomic<int>& done, int depth) {
  if (depth > 0) {
    s.spawn(tree_node(s, done, depth - 1));
    s.spawn(tree_node(s, done, depth - 1));
  }
  co_await spool::yield_now();
  // Relaxed: read after the scope finished, which orders every child's end before it.
  done.fetch_add(1, std::memory_order_relaxed);
}

Task<int> nested_tree() {
  std::atomic<int> done{0};  // the nodes' count (see tree_node)
  int from_body = co_await spool::scope([&](Scope& s) -> Task<int> {
    s.spawn(tree_node(s, done, 5));
    co_return 7;
  });
  co_return done.load(std::memory_order_relaxed) * 10 + from_body;
}

TEST_P(ScopeAnyFlavor, ChildrenSpawnIntoTheSameScopeAndTheBodysValueIsReturned) {
  auto rt = build();
  EXPECT_EQ(rt.block_on(nested_tree()), 63 * 10 + 7);  // 2^6 - 1 nodes
}

Task<void> pending_holding(DropCounter guard) {
  DropCounter held = std::move(guard);
  NeverReady never;
  co_await never;
}

Task<void> throw_after_yield(std::string what) {
  co_await spool::yield_now();
  throw std::runtime_error(what);
}

constexpr int kSiblings = 10;

// Awaits a scope running `body`: what it threw, and how many counted objects were gone by
// the time it reached the awaiter.
template <class Body>
Task<std::string> thrown_after_drops(Body body, Drops* dropped) {
  std::string caught = "(nothing thrown)";
  try {
    co_await spool::scope(std::move(body));
  } catch (const std::runtime_error& e) {
    caught = e.what();
  }
  co_return caught + " after " + std::to_string(dropped->load()) + " drops";
}

TEST_P(ScopeAnyFlavor, AChildsExceptionCancelsTheSiblingsAndTheBodyThenReachesTheAwaiter) {
  auto rt = build();
  Drops dropped{0};
  auto body = [d = &dropped](Scope& s) -> Task<void> {
    DropCounter body_local(*d);  // the body is cancelled too
    for (int i = 0; i < kSiblings; ++i) s.spawn(pending_holding(DropCounter(*d)));
    s.spawn(throw_after_yield("child failed"));
    NeverReady never;
    co_await never;
  };
  EXPECT_EQ(rt.block_on(thrown_after_drops(body, &dropped)),
            "child failed after " + std::to_string(kSiblings + 1) + " drops");
}

TEST_P(ScopeAnyFlavor, TheBodysExceptionCancelsTheChildrenThenReachesTheAwaiter) {
  auto rt = build();
  Drops dropped{0};
  auto body = [d = &dropped](Scope& s) -> Task<void> {
    for (int i = 0; i < kSiblings; ++i) s.spawn(pending_holding(DropCounter(*d)));
    co_await spool::yield_now();  // the children start
    throw std::runtime_error("body failed");
  };
  EXPECT_EQ(rt.block_on(thrown_after_drops(body, &dropped)),
            "body failed after " + std::to_string(kSiblings) + " drops");
}

// Counts `started` down at its first poll, then waits forever holding `guard`.
Task<void> start_then_hold(DropCounter guard, std::latch* started) {
  DropCounter held = std::move(guard);
  started->count_down();
  NeverReady never;
  co_await never;
}

Task<void> until_latched(std::latch* latch) {
  while (!latch->try_wait()) co_await spool::yield_now();
}

// A scope whose children all wait forever loses a select: destroying it cancels them, and
// the select returns only after every child's frame is gone.
Task<std::string> scope_loses_select(Drops* dropped) {
  std::latch started(kSiblings);
  auto won = co_await spool::select(spool::scope([&](Scope& s) -> Task<void> {
                                      for (int i = 0; i < kSiblings; ++i)
                                        s.spawn(start_then_hold(DropCounter(*dropped), &started));
                                      NeverReady never;
                                      co_await never;
                                    }),
                                    until_latched(&started));
  co_return "winner " + std::to_string(won.index()) + ", " + std::to_string(dropped->load()) +
      " drops";
}

TEST_P(ScopeAnyFlavor, DestroyingThePendingScopeCancelsItsChildrenBeforeReturning) {
  auto rt = build();
  Drops dropped{0};
  EXPECT_EQ(rt.block_on(scope_loses_select(&dropped)),
            "winner 1, " + std::to_string(kSiblings) + " drops");
}

// The awaiting task is cancelled by the runtime's shutdown while its scope waits for
// children blocked forever: every frame is destroyed, nothing hangs (and LSan sees no leak).
Task<void> parent_of_blocked_children(Drops* dropped, std::latch* started) {
  DropCounter parent_local(*dropped);
  co_await spool::scope([&](Scope& s) -> Task<void> {
    for (int i = 0; i < kSiblings; ++i) s.spawn(start_then_hold(DropCounter(*dropped), started));
    co_return;
  });
}

TEST_P(ScopeAnyFlavor, RuntimeShutdownWhileAScopeWaitsCancelsEverything) {
  Drops dropped{0};
  {
    auto rt = build();
    std::latch started(kSiblings);
    rt.spawn(parent_of_blocked_children(&dropped, &started)).detach();
    until_done(rt, started);
  }
  EXPECT_EQ(dropped.load(), kSiblings + 1);
}

// A leaf whose poll blocks its worker: it opens `in_poll`, then waits for `release`.
struct BlockingPoll {
  Gate* in_poll;
  Gate* release;
  Poll<void> poll(Context&) {
    in_poll->open();
    release->wait();
    return spool::pending;
  }
};

Task<void> blocked_in_poll(DropCounter guard, Gate* in_poll, Gate* release) {
  DropCounter held = std::move(guard);
  BlockingPoll blocking{in_poll, release};
  co_await blocking;
}

// Opens its gate when destroyed (a moved-from one does not).
class OpenOnDrop {
 public:
  explicit OpenOnDrop(Gate& gate) noexcept : gate_(&gate) {}
  OpenOnDrop(OpenOnDrop&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
  OpenOnDrop& operator=(OpenOnDrop&&) = delete;
  ~OpenOnDrop() {
    if (gate_ != nullptr) gate_->open();
  }

 private:
  Gate* gate_;
};

Task<void> idle_until_dropped(OpenOnDrop opener, std::latch* started) {
  OpenOnDrop held = std::move(opener);
  started->count_down();
  NeverReady never;
  co_await never;
}

// The scope's first child blocks its worker in a poll that only the destruction of the
// second child (idle, so cancelled on the spot) ends: the scope is destroyed while its first
// child is being polled, and must wait for that poll to end and the child to be cancelled.
Task<void> until_polling_and_idle(Gate* polling, std::latch* idle) {
  while (!polling->is_open() || !idle->try_wait()) co_await spool::yield_now();
}

Task<std::int64_t> scope_with_child_in_poll_loses(Drops* dropped) {
  Gate in_poll;
  Gate release;
  std::latch started(1);
  auto scope = spool::scope([&](Scope& s) -> Task<void> {
    s.spawn(blocked_in_poll(DropCounter(*dropped), &in_poll, &release));
    s.spawn(idle_until_dropped(OpenOnDrop(release), &started));
    NeverReady never;
    co_await never;
  });
  auto won = co_await spool::select(std::move(scope), until_polling_and_idle(&in_poll, &started));
  co_return static_cast<std::int64_t>(won.index()) * 100 + dropped->load();
}

TEST(ScopeMultiThread, DestroyingTheScopeWaitsForAChildBeingPolledOnAnotherWorker) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  Drops dropped{0};
  EXPECT_EQ(rt.block_on(scope_with_child_in_poll_loses(&dropped)), 101);
}

TEST(ScopeAnyExecutor, AScopeWithoutChildrenRunsUnderSpoolBlockOn) {
  EXPECT_EQ(spool::block_on(spool::scope([](Scope&) -> Task<int> { co_return 5; })), 5);
}

Task<void> nothing() { co_return; }

TEST(ScopeMisuse, SpawningOutsideARuntimeThrows) {
  std::string what = what_thrown<std::logic_error>([] {
    spool::block_on(spool::scope([](Scope& s) -> Task<void> {
      s.spawn(nothing());
      co_return;
    }));
  });
  EXPECT_NE(what.find("outside a runtime"), std::string::npos) << what;
}

Task<std::string> spawn_through(Scope* escaped) {
  co_return what_thrown<std::logic_error>([escaped] { escaped->spawn(nothing()); });
}

TEST(ScopeMisuse, SpawningAfterTheScopeFinishedOrPollingItAgainThrows) {
  auto rt = spool::Builder::current_thread().build();
  Scope* escaped = nullptr;
  auto fut = spool::scope([&](Scope& s) -> Task<void> {
    escaped = &s;
    co_return;
  });
  rt.block_on(fut);
  std::string what = rt.block_on(spawn_through(escaped));
  EXPECT_NE(what.find("after the scope finished"), std::string::npos) << what;
  EXPECT_THROW(rt.block_on(fut), std::logic_error);
}

// Destroys the runtime when the frame that holds it is destroyed.
struct ResetRuntimeOnDrop {
  explicit ResetRuntimeOnDrop(std::optional<spool::Runtime>* runtime) : rt(runtime) {}
  ResetRuntimeOnDrop(ResetRuntimeOnDrop&& other) noexcept : rt(std::exchange(other.rt, nullptr)) {}
  ~ResetRuntimeOnDrop() {
    if (rt != nullptr) rt->reset();
  }
  std::optional<spool::Runtime>* rt;
};

Task<void> never_polled(ResetRuntimeOnDrop) { co_return; }

// A scope dropped off its runtime's threads cancels its children on the dropping thread; the
// runtime may go meanwhile (here from the child's own destructor): the cancel's completion
// must still find the child's scheduler (under ASan, a use after free without the scope's
// pin of its children's runtime).
TEST(ScopeCurrentThread, ADroppedScopeCancelsItsChildEvenIfTheRuntimeGoesMeanwhile) {
  std::optional<spool::Runtime> rt(spool::Builder::current_thread().build());
  {
    auto fut = spool::scope([&](Scope& s) -> Task<void> {
      s.spawn(never_polled(ResetRuntimeOnDrop(&rt)));
      NeverReady never;
      co_await never;
    });
    rt->block_on(spool_time_test::poll_once(fut));  // the body spawned the child and waits
  }  // the drop cancels the child here, which destroys the runtime
  EXPECT_FALSE(rt.has_value());
}

}  // namespace
}  // namespace spool_comb_test
