// A scope destroyed early blocks its thread until its children are gone; on a worker, that
// wait first hands the worker's core over (as block_in_place does), so a child that waits on
// a task queued on that very worker — here in its LIFO slot — can still finish.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>

#include "spool/spool.hpp"

namespace {

using spool::Task;

// Reached only if the behaviour under test is broken (the test then fails, not hangs).
constexpr auto kHangGuard = std::chrono::seconds(60);

struct Shared {
  spool::Notify child_blocked;     // the child is about to block in block_in_place
  std::promise<void> released;     // set by `release`, a task in the worker's LIFO slot
  bool child_saw_release = false;  // written by the child, read after the join
};

// Blocks its thread (block_in_place) until `release` ran.
Task<void> blocking_child(Shared* s) {
  s->child_blocked.notify_one();  // wakes the parent into this worker's LIFO slot
  spool::block_in_place([&] {
    s->child_saw_release =
        s->released.get_future().wait_for(kHangGuard) == std::future_status::ready;
  });
  co_return;
}

Task<void> release(Shared* s) {
  s->released.set_value();
  co_return;
}

// Once the child blocks: spawns `release` (into the LIFO slot of the worker polling this)
// and wins the select, which destroys the scope — whose destructor waits for the child.
Task<void> spawn_release_then_win(Shared* s) {
  co_await s->child_blocked.notified();
  spool::spawn(release(s)).detach();
  co_return;
}

Task<void> parent(Shared* s) {
  auto body = [s](spool::Scope& scope) -> Task<void> {
    scope.spawn(blocking_child(s));
    co_await spool::Notify().notified();  // never: the scope is destroyed by the select
  };
  co_await spool::select(spool::scope(body), spawn_release_then_win(s));
}

TEST(ScopeClose, AWorkerThatWaitsForChildrenHandsItsCoreOverFirst) {
  // One worker: the child, the parent and `release` all queue on its core.
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  Shared s;
  rt.block_on(rt.spawn(parent(&s)));
  EXPECT_TRUE(s.child_saw_release)
      << "the task in the waiting worker's LIFO slot never ran while the scope waited";
}

}  // namespace
