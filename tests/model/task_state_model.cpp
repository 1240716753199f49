// Model of the task state word (the transitions of src/task/state.hpp, on a bare word).
//
// Invariants, for a task woken by another thread while it is polled, and whose JoinHandle
// aborts it (in the second model) and is dropped concurrently:
//  - no two polls at once, and no poll after the task completed (`polls` and `completed`
//    are Relacy vars: a poll not ordered after the previous claim is a data race);
//  - a wake during a poll causes exactly one more poll: the task is polled after the wake
//    (it sees the event and completes) unless it was cancelled, and polled at most twice;
//  - the frame is destroyed, by exactly one thread (cancel, complete without a JoinHandle,
//    or the JoinHandle's drop after completion), ordered after the task wrote its output
//    and before the memory is freed (`output` and `freed` are Relacy vars);
//  - the reference count reaches zero exactly once, and the memory is freed then.
//
// Threads: a worker runs the task's first queue entry; a waker sets the event and wakes
// the task through its Waker reference (running the entry it submits, if any, as a worker
// would), then drops the reference (or, woken by value as on a worker, hands it to the
// entry or drops it in the wake's RMW); the JoinHandle's thread (optionally aborts and) drops
// the JoinHandle. The harness steps between transitions follow src/task/harness.cpp
// (run_task, complete, cancel, join_drop).
#include <cstdint>

#include "model/task_model.hpp"

namespace {

namespace sd = spool::detail;

template <bool kAbort, bool kWakeByVal = false>
struct TaskStateModel : rl::test_suite<TaskStateModel<kAbort, kWakeByVal>, 3> {
  // The first queue entry, the owned-task list, the JoinHandle, and the waker thread's
  // Waker (a clone made before it starts, counted as made: the transitions read the reference
  // count under those bits).
  spool::model::TaskModel task{sd::kNotified | sd::kJoinInterest | 4 * sd::kRefOne | sd::kMadeOne};

  void before() { task.reset(); }

  void thread(unsigned index) {
    if (index == 0) {
      task.run_entry();
    } else if (index == 1) {
      task.event.store(true, std::memory_order_relaxed);
      if (kWakeByVal) {
        // harness.cpp waker_wake on a worker: the Waker's reference goes with the wake.
        switch (sd::transition_to_notified_by_val(task.state)) {
          case sd::WakeResult::kSubmit:
            task.run_entry();  // with the Waker's reference, now the queue entry's
            break;
          case sd::WakeResult::kDealloc:
            task.dealloc();
            break;
          case sd::WakeResult::kNothing:
            break;
        }
      } else {
        if (sd::transition_to_notified_by_ref(task.state) == sd::WakeResult::kSubmit)
          task.run_entry();
        task.drop_refs(1);  // the Waker's reference
      }
      // Shutdown's pop of a task it then finds claimed: the list's reference, dropped
      // (src/runtime/shared.cpp): the completer is then left with its claim's alone.
      if (task.list_refs() == 1) task.drop_refs(1);
    } else {
      if (kAbort) {
        if (sd::transition_to_notified_and_cancel(task.state) == sd::WakeResult::kSubmit)
          task.run_entry();
      }
      sd::drop_join_interest(task.state, task);  // harness.cpp join_drop
    }
  }

  void after() {
    std::uint64_t s = task.state.load(std::memory_order_relaxed);
    // A completer left alone with the header frees it without writing the word, which then
    // still counts its references (the claim's, and the list's unless popped).
    RL_ASSERT((s & sd::kComplete)
                  ? sd::ref_count(s) == 0
                  : (s & sd::kRunning) && sd::ref_count(s) >= 1 && sd::ref_count(s) <= 2);
    RL_ASSERT(task.deallocs.load(std::memory_order_relaxed) == 1);
    RL_ASSERT(task.frame_destroyed($) == 1);
    RL_ASSERT(task.completed($));
    // Woken once after the first poll may have missed the event: at most two polls, and
    // without an abort the task completed by a poll that saw the event.
    RL_ASSERT(task.polls($) <= 2);
    if (!kAbort) RL_ASSERT(task.polls($) >= 1 && !(s & sd::kCancelled));
  }
};

}  // namespace

int main() {
  int failed = 0;
  failed += spool::model::run_model<TaskStateModel<false>>("task_state (wake, join drop)", 200000);
  failed +=
      spool::model::run_model<TaskStateModel<true>>("task_state (wake, abort, join drop)", 200000);
  failed += spool::model::run_model<TaskStateModel<false, true>>(
      "task_state (wake by value, join drop)", 200000);
  failed += spool::model::run_model<TaskStateModel<true, true>>(
      "task_state (wake by value, abort, join drop)", 200000);
  return failed == 0 ? 0 : 1;
}
