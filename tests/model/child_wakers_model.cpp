// Model of spool::detail::ChildWakers (include/spool/detail/child_wakers.hpp), the per-child
// wakers of when_all, when_any and JoinSet.
//
// Invariants:
//  - no lost wake-up (ChildWakersPollModel): the owner polls (registers the parent's waker,
//    then takes the ready bits) while two threads wake child 0 and child 1 through clones.
//    For each child, either that poll saw its bit, or its bit is still set and the parent's
//    waker was woken (so the parent polls again and sees it);
//  - lifetime (ChildWakersDropModel): the owner destroys its ChildWakers while the two
//    threads still wake and drop their clones. No clone touches freed memory (Relacy checks
//    every access), the block is freed by the last reference (Relacy reports a leak), and
//    every clone of the parent's waker is dropped.
#include <optional>

#include "model/counted_waker.hpp"
#include "model/run_model.hpp"
#include "spool/detail/child_wakers.hpp"

namespace {

using spool::Waker;
using spool::detail::ChildWakers;
using spool::model::Pool;
using spool::model::Task;

// What both models share: a ChildWakers with two children whose first (at-grow) wake was
// already taken, a clone of each child's waker for the waking threads, and the parent.
struct TwoChildren {
  Pool pool;
  Task parent;
  std::optional<ChildWakers> wakers;
  std::optional<Waker> clones[2];

  void set_up() {
    wakers.emplace();
    wakers->grow(2);
    wakers->for_each_ready([](std::size_t) { return false; });  // the wakes of grow()
    for (std::size_t i = 0; i < 2; ++i) clones[i].emplace(wakers->waker(i));
  }
  // Threads 1 and 2: child 0 wakes by reference then drops its clone; child 1 consumes it.
  void wake_child(unsigned index) {
    if (index == 1) {
      clones[0]->wake_by_ref();
      clones[0].reset();
    } else {
      std::move(*clones[1]).wake();
      clones[1].reset();
    }
  }
  // The poll of a combinator: register the parent's waker, then take the ready set.
  int poll() {
    Waker w = Waker::from_raw(pool.make(parent));
    wakers->register_parent(w);
    int seen = 0;
    wakers->for_each_ready([&seen](std::size_t i) {
      seen |= 1 << i;
      return false;
    });
    return seen;
  }
};

struct ChildWakersPollModel : rl::test_suite<ChildWakersPollModel, 3> {
  TwoChildren t;
  rl::var<int> seen;

  void before() { t.set_up(); }
  void thread(unsigned index) {
    if (index == 0) {
      seen($) = t.poll();
    } else {
      t.wake_child(index);
    }
  }
  void after() {
    int later = t.poll();  // the poll the parent's wake-up would bring
    const bool parent_woken = t.parent.wakes.load(std::memory_order_relaxed) >= 1;
    for (int child = 0; child < 2; ++child) {
      const int bit = 1 << child;
      RL_ASSERT((seen($) & bit) != 0 || ((later & bit) != 0 && parent_woken));
    }
    t.wakers.reset();
    RL_ASSERT(t.parent.refs.load(std::memory_order_relaxed) == 0);
  }
};

struct ChildWakersDropModel : rl::test_suite<ChildWakersDropModel, 3> {
  TwoChildren t;

  void before() { t.set_up(); }
  void thread(unsigned index) {
    if (index == 0) {
      (void)t.poll();
      t.wakers.reset();  // the combinator goes while its children's clones live on
    } else {
      t.wake_child(index);
    }
  }
  void after() { RL_ASSERT(t.parent.refs.load(std::memory_order_relaxed) == 0); }
};

}  // namespace

int main() {
  if (int rc = spool::model::run_model<ChildWakersPollModel>("child_wakers_poll", 100000)) {
    return rc;
  }
  return spool::model::run_model<ChildWakersDropModel>("child_wakers_drop", 100000);
}
