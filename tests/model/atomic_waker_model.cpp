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

#include "model/run_model.hpp"
#include "spool/core/atomic_waker.hpp"

namespace {

namespace sd = spool::detail;

constexpr int kMaxHandles = 8;

// A task a waker wakes: how many wakes reached it, and how many handles refer to it.
struct Task {
  sd::Atomic<int> wakes{0};
  sd::Atomic<int> refs{0};
};

struct Pool;

// One waker handle (the original or a clone): the RawWaker's data.
struct Handle {
  Pool* pool = nullptr;
  Task* task = nullptr;
  rl::var<int> live;  // 1 from its creation to its drop
};

// The handles of one execution (no allocation inside the model).
struct Pool {
  Handle handles[kMaxHandles];
  sd::Atomic<int> used{0};

  spool::RawWaker make(Task& task);
};

const Handle& handle(const void* p) { return *static_cast<const Handle*>(p); }

spool::RawWaker clone(const void* p) {
  const Handle& h = handle(p);
  RL_ASSERT(h.live($) == 1);
  return h.pool->make(*h.task);
}
void wake_by_ref(const void* p) {
  const Handle& h = handle(p);
  RL_ASSERT(h.live($) == 1);
  h.task->wakes.fetch_add(1, std::memory_order_relaxed);
}
void drop(const void* p) {
  Handle& h = const_cast<Handle&>(handle(p));
  RL_ASSERT(h.live($) == 1);
  h.live($) = 0;
  h.task->refs.fetch_sub(1, std::memory_order_relaxed);
}
void wake(const void* p) {
  wake_by_ref(p);
  drop(p);
}
constexpr spool::WakerVTable kVTable{&clone, &wake, &wake_by_ref, &drop};

spool::RawWaker Pool::make(Task& task) {
  int i = used.fetch_add(1, std::memory_order_relaxed);
  RL_ASSERT(i < kMaxHandles);
  Handle& h = handles[i];
  h.pool = this;
  h.task = &task;
  h.live($) = 1;
  task.refs.fetch_add(1, std::memory_order_relaxed);
  return spool::RawWaker{&h, &kVTable};
}

struct AtomicWakerModel : rl::test_suite<AtomicWakerModel, 3> {
  Pool pool;
  Task first;
  Task last;
  std::optional<spool::AtomicWaker> slot;
  sd::Atomic<bool> event{false};
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
