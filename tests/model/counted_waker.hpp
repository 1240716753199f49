// Counted wakers for the Relacy models: a pool of waker handles whose vtable checks that no
// handle is used after its drop (or without a happens-before edge from its creation) and
// counts, per task, the wakes that reached it and the handles still alive.
#pragma once

#include "model/run_model.hpp"
#include "spool/core/waker.hpp"

namespace spool::model {

inline constexpr int kMaxHandles = 8;

/// A task a waker wakes: how many wakes reached it, and how many handles refer to it.
struct Task {
  spool::detail::Atomic<int> wakes{0};
  spool::detail::Atomic<int> refs{0};
};

struct Pool;

/// One waker handle (the original or a clone): the RawWaker's data.
struct Handle {
  Pool* pool = nullptr;
  Task* task = nullptr;
  rl::var<int> live;  // 1 from its creation to its drop (a Relacy var: races are reported)
};

/// The handles of one execution (no allocation inside the model).
struct Pool {
  Handle handles[kMaxHandles];
  spool::detail::Atomic<int> used{0};

  /// A new handle to `task` (one more reference).
  spool::RawWaker make(Task& task);
};

namespace counted {
inline const Handle& handle(const void* p) { return *static_cast<const Handle*>(p); }
inline spool::RawWaker clone(const void* p) {
  const Handle& h = handle(p);
  RL_ASSERT(h.live($) == 1);
  return h.pool->make(*h.task);
}
inline void wake_by_ref(const void* p) {
  const Handle& h = handle(p);
  RL_ASSERT(h.live($) == 1);
  h.task->wakes.fetch_add(1, std::memory_order_relaxed);
}
inline void drop(const void* p) {
  Handle& h = const_cast<Handle&>(handle(p));
  RL_ASSERT(h.live($) == 1);
  h.live($) = 0;
  h.task->refs.fetch_sub(1, std::memory_order_relaxed);
}
inline void wake(const void* p) {
  wake_by_ref(p);
  drop(p);
}
inline constexpr spool::WakerVTable kVTable{&clone, &wake, &wake_by_ref, &drop};
}  // namespace counted

inline spool::RawWaker Pool::make(Task& task) {
  int i = used.fetch_add(1, std::memory_order_relaxed);
  RL_ASSERT(i < kMaxHandles);
  Handle& h = handles[i];
  h.pool = this;
  h.task = &task;
  h.live($) = 1;
  task.refs.fetch_add(1, std::memory_order_relaxed);
  return spool::RawWaker{&h, &counted::kVTable};
}

}  // namespace spool::model
