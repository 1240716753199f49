// Model of spool::AtomicWaker (include/spool/core/atomic_waker.hpp).
//
// Invariants:
//  - no lost wake-up: the task registers a waker, registers another (the replace path),
//    then checks the event; two threads set the event and wake concurrently. After the
//    last register/check pair, either the task saw the event or the waker it registered
//    last was woken;
//  - clone/drop balance: every clone the AtomicWaker makes is dropped exactly once (once
//    the AtomicWaker is destroyed, each task's reference count is back to zero), and no
//    clone is used after its drop or without a happens-before edge from its creation
//    (each clone's liveness flag is a Relacy var: a racing access is a data race).
#include <optional>

#include "model/counted_waker.hpp"
#include "model/run_model.hpp"
#include "spool/core/atomic_waker.hpp"

namespace {

using spool::model::Pool;
using spool::model::Task;

struct AtomicWakerModel : rl::test_suite<AtomicWakerModel, 3> {
  Pool pool;
  Task first;
  Task last;
  std::optional<spool::AtomicWaker> slot;
  spool::detail::Atomic<bool> event{false};
  rl::var<bool> saw_event;

  void before() { slot.emplace(); }

  void thread(unsigned index) {
    if (index == 0) {
      // The task: its own wakers live in this thread, the slot holds clones.
      spool::Waker w1 = spool::Waker::from_raw(pool.make(first));
      spool::Waker w2 = spool::Waker::from_raw(pool.make(last));
      slot->register_waker(w1);
      slot->register_waker(w2);
      saw_event($) = event.load(std::memory_order_acquire);
    } else {
      event.store(true, std::memory_order_release);
      slot->wake();
    }
  }

  void after() {
    RL_ASSERT(saw_event($) || last.wakes.load(std::memory_order_relaxed) >= 1);
    slot.reset();  // drops the registered clone, if any
    RL_ASSERT(first.refs.load(std::memory_order_relaxed) == 0);
    RL_ASSERT(last.refs.load(std::memory_order_relaxed) == 0);
  }
};

}  // namespace

int main() { return spool::model::run_model<AtomicWakerModel>("atomic_waker", 200000); }
