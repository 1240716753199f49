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

#include "model/run_model.hpp"
#include "task/state.hpp"

namespace {

namespace sd = spool::detail;

template <bool kAbort, bool kWakeByVal = false>
struct TaskStateModel : rl::test_suite<TaskStateModel<kAbort, kWakeByVal>, 3> {
  // The first queue entry, the owned-task list, the JoinHandle, and the waker thread's
  // Waker (a clone made before it starts).
  sd::StateWord state{sd::kNotified | sd::kJoinInterest | 4 * sd::kRefOne};
  sd::Atomic<bool> event{false};  // what the task waits for: set before the wake
  rl::var<int> polls;
  rl::var<bool> completed;
  rl::var<int> frame_destroyed;  // 1 once destroyed
  rl::var<int> output;           // written by the completing poll, destroyed with the frame
  rl::var<bool> freed;           // the memory, freed by the last reference
  sd::Atomic<int> deallocs{0};   // times the count reached zero
  sd::Atomic<bool> list_holds{true};

  void before() {
    polls($) = 0;
    completed($) = false;
    frame_destroyed($) = 0;
    output($) = 0;
    freed($) = false;
  }

  void dealloc() {
    RL_ASSERT(frame_destroyed($) == 1);
    freed($) = true;
    deallocs.fetch_add(1, std::memory_order_relaxed);
  }
  void drop_refs(std::uint64_t n) {
    RL_ASSERT(!freed($));  // a reference holder may read the header until it lets go
    if (sd::ref_dec(state, n)) dealloc();
  }
  // harness.cpp destroy_finished_frame: by the one thread that saw both COMPLETE and the
  // JoinHandle gone (complete_claimed's and drop_join_interest's hook).
  void destroy_frame() {
    RL_ASSERT(!freed($));
    if (frame_destroyed($) == 0) {
      output($) = -1;
      frame_destroyed($) = 1;
    }
  }
  // The list's reference, if the task is still in the list (taken once: by the completer
  // leaving it, or by the waker thread acting as shutdown's pop, which drops it).
  std::uint64_t list_refs() {
    return list_holds.exchange(false, std::memory_order_relaxed) ? 1 : 0;
  }

  // complete_claimed's other hooks: the model's JoinHandle does not poll (no waker to wake)
  // and it pins nothing.
  void wake_join() { RL_ASSERT(false); }
  void before_release(std::uint64_t) {}

  // harness.cpp complete(): leaves the list, then state.hpp's complete_claimed.
  void complete() {
    const std::uint64_t own = 1 + list_refs();  // the list comes first
    completed($) = true;
    sd::complete_claimed(state, own, *this);
  }
  // harness.cpp cancel(): the claimer destroys the frame, then completes.
  void cancel() {
    RL_ASSERT(frame_destroyed($) == 0);
    output($) = -1;
    frame_destroyed($) = 1;
    complete();
  }

  // harness.cpp run_task, for one queue entry (and the reschedules it causes).
  void run_entry() {
    for (;;) {
      switch (sd::transition_to_running(state)) {
        case sd::RunClaim::kPoll:
          break;
        case sd::RunClaim::kCancel:
          cancel();
          return;
        case sd::RunClaim::kNone:
          return;
        case sd::RunClaim::kDealloc:
          dealloc();
          return;
      }
      RL_ASSERT(!completed($));
      polls($) = polls($) + 1;
      if (event.load(std::memory_order_relaxed)) {  // ready: the poll completes the task
        output($) = 1;
        complete();
        return;
      }
      switch (sd::transition_to_idle(state)) {
        case sd::IdleResult::kIdle:
          return;
        case sd::IdleResult::kNotified:
          continue;  // rescheduled with the run reference: the next entry, run here
        case sd::IdleResult::kCancel:
          cancel();
          return;
        case sd::IdleResult::kDealloc:
          dealloc();
          return;
      }
    }
  }

  void thread(unsigned index) {
    if (index == 0) {
      run_entry();
    } else if (index == 1) {
      event.store(true, std::memory_order_relaxed);
      if (kWakeByVal) {
        // harness.cpp waker_wake on a worker: the Waker's reference goes with the wake.
        switch (sd::transition_to_notified_by_val(state)) {
          case sd::WakeResult::kSubmit:
            run_entry();  // with the Waker's reference, now the queue entry's
            break;
          case sd::WakeResult::kDealloc:
            dealloc();
            break;
          case sd::WakeResult::kNothing:
            break;
        }
      } else {
        if (sd::transition_to_notified_by_ref(state) == sd::WakeResult::kSubmit) run_entry();
        drop_refs(1);  // the Waker's reference
      }
      // Shutdown's pop of a task it then finds claimed: the list's reference, dropped
      // (src/runtime/shared.cpp): the completer is then left with its claim's alone.
      if (list_refs() == 1) drop_refs(1);
    } else {
      if (kAbort) {
        if (sd::transition_to_notified_and_cancel(state) == sd::WakeResult::kSubmit) run_entry();
      }
      sd::drop_join_interest(state, *this);  // harness.cpp join_drop
    }
  }

  void after() {
    std::uint64_t s = state.load(std::memory_order_relaxed);
    // A completer left alone with the header frees it without writing the word, which then
    // still counts its references (the claim's, and the list's unless popped).
    RL_ASSERT((s & sd::kComplete)
                  ? sd::ref_count(s) == 0
                  : (s & sd::kRunning) && sd::ref_count(s) >= 1 && sd::ref_count(s) <= 2);
    RL_ASSERT(deallocs.load(std::memory_order_relaxed) == 1);
    RL_ASSERT(frame_destroyed($) == 1);
    RL_ASSERT(completed($));
    // Woken once after the first poll may have missed the event: at most two polls, and
    // without an abort the task completed by a poll that saw the event.
    RL_ASSERT(polls($) <= 2);
    if (!kAbort) RL_ASSERT(polls($) >= 1 && !(s & sd::kCancelled));
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
