// Model of the inspection claim (state.hpp transition_to_inspecting / transition_from_
// inspecting, inspection_count.hpp, harness.cpp inspect_task): another thread claims an idle
// task to read its chain, then gives the claim back, while the task is woken, aborted, shut
// down and its JoinHandle dropped.
//
// Invariants:
//  - the chain is never read during a poll, nor polled while read (`chain` is a Relacy var
//    that each poll writes and the inspector reads: unordered accesses are a data race);
//  - no wake-up is lost: woken during the inspection, the task is polled once more (it sees
//    the event and completes) unless it was cancelled;
//  - an abort or shutdown during the inspection is not lost, and the inspector never cancels:
//    the task goes back to a queue and a runtime thread (or the shutdown) cancels it;
//  - the shutdown cancels only once no inspection is held (`inspecting` is a Relacy var the
//    inspector writes while it holds the claim and the shutdown reads after its wait);
//  - the reference count reaches zero exactly once, and the memory is freed then.
// Each of these weakenings fails it: the claim's CAS relaxed (a race on `chain` with the
// first poll); the shutdown's RMW of the count replaced by a relaxed load, or the claim
// taken from a CANCELLED task (a race on `inspecting`).
//
// Threads: the inspector, holding a reference of its own (taken before, as inspect_task's
// caller does); a worker that runs the task's first queue entry (a poll that does not see
// the event); a waker that sets the event and wakes the task by reference, or the shutdown
// (CANCELLED on the task, the wait for inspections, then its pop of the task from its list);
// the JoinHandle's thread, which optionally aborts and then drops the JoinHandle. Entries
// submitted by a wake or a give-back are run by the thread that submitted them, as a worker
// would.
#include <cstdint>

#include "model/task_model.hpp"
#include "task/inspection_count.hpp"

namespace {

namespace sd = spool::detail;

enum class Other { kWake, kShutdown };

template <Other kOther, bool kAbort>
struct TaskInspectModel : rl::test_suite<TaskInspectModel<kOther, kAbort>, 4> {
  // A task queued for its first poll: the entry, the owned-task list, the JoinHandle, the
  // waker thread's Waker (counted as made) and the inspector hold a reference each.
  spool::model::TaskModel task{sd::kNotified | sd::kJoinInterest | 5 * sd::kRefOne | sd::kMadeOne};

  sd::InspectionCount readers;
  rl::var<bool> inspecting;  // true while the inspector holds its claim

  void before() {
    task.reset();
    inspecting($) = false;
  }

  // harness.cpp inspect_task, after its COMPLETE check and its pin.
  void inspect() {
    readers.enter();
    if (!sd::transition_to_inspecting(task.state)) {
      readers.leave();
      task.drop_refs(1);
      return;
    }
    inspecting($) = true;
    RL_ASSERT(task.chain($) >= 0);  // the read: ordered after the last poll, before the next
    inspecting($) = false;
    const bool reschedule = sd::transition_from_inspecting(task.state);
    readers.leave();
    if (reschedule) task.run_entry();  // (the entry runs on a worker, after the leave)
  }

  void thread(unsigned index) {
    if (index == 0) {
      inspect();
    } else if (index == 1) {
      task.run_entry();
    } else if (index == 2) {
      if (kOther == Other::kWake) {
        task.event.store(true, std::memory_order_relaxed);
        if (sd::transition_to_notified_by_ref(task.state) == sd::WakeResult::kSubmit)
          task.run_entry();
        task.drop_refs(1);  // the Waker's reference
      } else {
        // shared.cpp's shutdown: the start sets CANCELLED and waits for the inspections, then
        // each task is popped from the list and cancelled by shutdown_task if it can be
        // claimed (the list's reference serves as the claim), else the list's reference is
        // dropped.
        sd::transition_to_cancel_requested(task.state);
        while (readers.busy()) rl::yield(1, $);
        RL_ASSERT(!inspecting($));
        if (task.list_refs() == 1) {
          if (sd::transition_to_shutdown(task.state)) {
            task.cancel();
          } else {
            task.drop_refs(1);
          }
        }
        task.drop_refs(1);  // the Waker's reference (never woken)
      }
    } else {
      if (kAbort) {
        if (sd::transition_to_notified_and_cancel(task.state) == sd::WakeResult::kSubmit)
          task.run_entry();
      }
      sd::drop_join_interest(task.state, task);
    }
  }

  void after() {
    RL_ASSERT(task.deallocs.load(std::memory_order_relaxed) == 1);
    RL_ASSERT(task.frame_destroyed($) == 1);
    RL_ASSERT(task.completed($));
    RL_ASSERT(task.polls($) <= 2);  // the first entry's poll, and the wake's
    if (kOther == Other::kWake && !kAbort) {
      // Not cancelled: completed by a poll that saw the event.
      RL_ASSERT(task.polls($) >= 1 && !task.cancelled.load(std::memory_order_relaxed));
    }
    if (kOther == Other::kShutdown) RL_ASSERT(task.cancelled.load(std::memory_order_relaxed));
  }
};

}  // namespace

int main() {
  int failed = 0;
  failed += spool::model::run_model<TaskInspectModel<Other::kWake, false>>(
      "task_inspect (wake, join drop)", 200000);
  failed += spool::model::run_model<TaskInspectModel<Other::kWake, true>>(
      "task_inspect (wake, abort, join drop)", 200000);
  failed += spool::model::run_model<TaskInspectModel<Other::kShutdown, false>>(
      "task_inspect (shutdown, join drop)", 200000);
  return failed == 0 ? 0 : 1;
}
