// Races of spool::scope, meant for ThreadSanitizer: children spawning grandchildren into
// their scope from the workers while siblings fail, scopes destroyed while their children
// run and spawn, and runtimes shut down while scopes wait. Bounded by a count of rounds;
// every round checks the invariant that every future handed to Scope::spawn was destroyed
// exactly once by the time the scope's co_await (or its destruction) ended — run to the
// end, cancelled, or dropped unrun — and, when nothing failed, that every child ran.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

#include "spool/spool.hpp"
#include "support/comb_futures.hpp"
#include "support/rt_drop_counter.hpp"

namespace spool_comb_test {
namespace scope_stress_test {
namespace {

using spool::Scope;
using spool_rt_test::DropCounter;

constexpr int kRounds = 2000;
constexpr int kChildren = 6;
constexpr int kGrandchildren = 4;

// Futures handed to Scope::spawn, and their destructions. `made` is bumped by the spawner
// before each spawn, `dropped` by DropCounter when the future's frame goes (both seq_cst);
// a round reads them after its scope finished or was destroyed, which orders every child's
// end (and every spawn made inside a child's poll) before the read.
struct Tally {
  std::atomic<std::int64_t> made{0};
  std::atomic<std::int64_t> dropped{0};
};

// Writes its slot of the borrowed array after a yield; throws instead if `fail`.
Task<void> grandchild(DropCounter guard, int* slot, bool fail) {
  DropCounter held = std::move(guard);
  co_await spool::yield_now();
  if (fail) throw std::runtime_error("grandchild failed");
  *slot = 1;
}

// Spawns its grandchildren into the scope from whichever worker polls it.
Task<void> child(Scope& s, Tally& tally, DropCounter guard, int* slots, int failing) {
  DropCounter held = std::move(guard);
  co_await spool::yield_now();
  for (int g = 0; g < kGrandchildren; ++g) {
    tally.made.fetch_add(1);
    s.spawn(grandchild(DropCounter(tally.dropped), &slots[g], g == failing));
  }
}

// One round: children and grandchildren fill a local array; if `fail_at` names a
// grandchild, it throws and the rest are cancelled. Returns what reached the awaiter.
Task<std::string> nested_round(Tally* tally, int fail_at) {
  std::array<int, kChildren * kGrandchildren> slots{};
  std::string outcome = "ok";
  try {
    co_await spool::scope([&](Scope& s) -> Task<void> {
      for (int c = 0; c < kChildren; ++c) {
        const int failing = fail_at / kGrandchildren == c ? fail_at % kGrandchildren : -1;
        tally->made.fetch_add(1);
        s.spawn(child(s, *tally, DropCounter(tally->dropped), &slots[c * kGrandchildren], failing));
      }
      co_return;
    });
  } catch (const std::runtime_error& e) {
    outcome = e.what();
  }
  if (tally->made.load() != tally->dropped.load()) co_return "a spawned future outlived the scope";
  if (outcome == "ok") {
    for (int v : slots) {
      if (v != 1) co_return "a child did not run";
    }
  }
  co_return outcome;
}

TEST(ScopeStress, NestedSpawnsFromTheWorkersWhileAGrandchildFails) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  for (int round = 0; round < kRounds; ++round) {
    Tally tally;
    const bool fails = round % 2 == 1;
    const int fail_at = fails ? round % (kChildren * kGrandchildren) : -1;
    ASSERT_EQ(rt.block_on(nested_round(&tally, fail_at)), fails ? "grandchild failed" : "ok")
        << "round " << round;
  }
}

// What busy children share, in the awaiting frame. `borrowed`: touched by every turn of
// every child, relaxed (only ASan cares: a touch after the frame went). `spawns_left`: the
// spawns the children may still make, taken with relaxed fetch_sub (only the count matters).
struct BusyShared {
  std::atomic<std::int64_t> borrowed{0};
  std::atomic<int> spawns_left{kChildren * 4};
};

void spawn_busy(Scope& s, Tally& tally, BusyShared& shared);

// Keeps yielding, touching `shared` and spawning one more busy child per turn while
// `spawns_left` allows: ends only when cancelled.
Task<void> busy(Scope& s, Tally& tally, DropCounter guard, BusyShared& shared) {
  DropCounter held = std::move(guard);
  for (;;) {
    co_await spool::yield_now();
    shared.borrowed.fetch_add(1, std::memory_order_relaxed);
    if (shared.spawns_left.fetch_sub(1, std::memory_order_relaxed) > 0)
      spawn_busy(s, tally, shared);
  }
}

void spawn_busy(Scope& s, Tally& tally, BusyShared& shared) {
  tally.made.fetch_add(1);
  s.spawn(busy(s, tally, DropCounter(tally.dropped), shared));
}

// A scope of busy children loses a select to a leaf fired from a plain thread: its
// destruction cancels children that are running and spawning on the workers.
Task<bool> destroyed_while_busy(Tally* tally, ManualLeaf fired) {
  BusyShared shared;
  auto scope = spool::scope([&](Scope& s) -> Task<void> {
    for (int c = 0; c < kChildren; ++c) spawn_busy(s, *tally, shared);
    ManualLeaf never;  // the body waits forever
    co_await never;
  });
  auto won = co_await spool::select(std::move(scope), std::move(fired));
  co_return won.index() == 1 && tally->made.load() == tally->dropped.load();
}

TEST(ScopeStress, DestroyedWhileItsChildrenRunAndSpawn) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  for (int round = 0; round < kRounds / 2; ++round) {
    Tally tally;
    ManualLeaf fired;
    std::thread firer([fired]() mutable { fired.fire(); });
    bool ok = rt.block_on(destroyed_while_busy(&tally, fired));
    firer.join();
    ASSERT_TRUE(ok) << "round " << round << ": made " << tally.made.load() << ", dropped "
                    << tally.dropped.load();
  }
}

Task<void> parent_of_busy(Tally* tally) {
  BusyShared shared;
  co_await spool::scope([&](Scope& s) -> Task<void> {
    for (int c = 0; c < kChildren; ++c) spawn_busy(s, *tally, shared);
    co_return;
  });
}

TEST(ScopeStress, RuntimeShutdownWhileScopesWaitForBusyChildren) {
  for (int round = 0; round < kRounds / 4; ++round) {
    Tally tally;
    {
      auto rt = spool::Builder::multi_thread().worker_threads(2).build();
      rt.spawn(parent_of_busy(&tally)).detach();
      rt.spawn(parent_of_busy(&tally)).detach();
    }
    ASSERT_EQ(tally.made.load(), tally.dropped.load()) << "round " << round;
  }
}

}  // namespace
}  // namespace scope_stress_test
}  // namespace spool_comb_test
