// Model of a JoinHandle that polls, then is dropped, while a worker completes its task: the
// JoinHandle's half of src/task/harness.cpp (join_poll_complete, join_drop) against
// complete() with all three of its paths (one CAS while no waker is registered; COMPLETE
// then the wake; the JoinHandle gone, so the frame goes and completing and letting go are
// one RMW).
//
// Invariant: the frame is destroyed exactly once and after the output was written, the
// header is freed exactly once and after every other use of it (the join waker slot's read
// by the wake included), and no waker reference leaks. A third thread drops a Waker clone,
// so any of the three may free the header. The frame and the header are Relacy vars: a
// destruction not ordered after the other side's accesses is reported as a race. Each of
// these weakenings fails it: the JoinHandle's drop CAS relaxed, or its loads of COMPLETE
// relaxed; complete()'s one-RMW release (complete_and_release) or its COMPLETE RMW made
// acquire only; ref_dec made release only or acquire only.
#include <optional>

#include "model/counted_waker.hpp"
#include "model/run_model.hpp"
#include "task/state.hpp"

namespace {

namespace sd = spool::detail;
using spool::model::Pool;
using spool::model::Task;

struct JoinDropModel : rl::test_suite<JoinDropModel, 3> {
  Pool pool;
  Task waiter;
  // Claimed by the worker; the claim, the JoinHandle and a Waker clone (held by whatever the
  // task waited on) hold the references.
  sd::StateWord state{sd::kRunning | sd::kJoinInterest | 3 * sd::kRefOne};
  std::optional<spool::Waker> join_waker;  // the header's slot: a no-op waker at first
  rl::var<int> output;                     // the frame: written by the poll, read by the join
  rl::var<int> frames_destroyed;
  rl::var<int> headers_freed;
  rl::var<int> header;  // stands for the header's fields, read by each side before it lets go

  void before() {
    join_waker.emplace();
    output($) = 0;
    frames_destroyed($) = 0;
    headers_freed($) = 0;
    header($) = 0;
  }

  void destroy_frame() {
    RL_ASSERT(frames_destroyed($) == 0);
    frames_destroyed($) = 1;
    output($) = -1;  // the frame's destructors: a write racing any unordered access
  }

  void free_header() {
    RL_ASSERT(frames_destroyed($) == 1);  // a read: races a destruction not ordered before it
    RL_ASSERT(headers_freed($) == 0);
    headers_freed($) = 1;
    header($) = -1;
    join_waker.reset();  // ~TaskHeader drops the slot's waker
  }

  // harness.cpp complete() with own = 1 (the claim's reference).
  void complete() {
    output($) = 42;
    RL_ASSERT(header($) == 0);
    std::uint64_t cur = state.load(std::memory_order_acquire);
    while ((cur & sd::kJoinInterest) && !(cur & sd::kJoinWaker)) {
      if (sd::transition_to_complete_for_join(state, cur, 1)) return;
    }
    if (!(cur & sd::kJoinInterest)) {
      destroy_frame();
      if (sd::transition_to_complete_and_release(state, 1)) free_header();
      return;
    }
    const std::uint64_t prev = sd::transition_to_complete(state);
    if (prev & sd::kJoinInterest) {
      if (prev & sd::kJoinWaker) join_waker->wake_by_ref();
    } else {
      destroy_frame();
    }
    if (sd::ref_dec(state)) free_header();
  }

  // The JoinHandle: one poll (join_poll_complete), then its drop (join_drop).
  void join_handle() {
    {
      spool::Waker w = spool::Waker::from_raw(pool.make(waiter));
      if (sd::join_register_waker(state, *join_waker, w)) RL_ASSERT(output($) == 42);
    }
    RL_ASSERT(header($) == 0);
    if (sd::transition_to_join_dropped(state)) {
      destroy_frame();
      if (sd::ref_dec(state)) free_header();
    }
  }

  void thread(unsigned index) {
    if (index == 0) {
      complete();
    } else if (index == 1) {
      join_handle();
    } else {
      // The Waker clone's drop (waker_drop -> drop_task_refs).
      RL_ASSERT(header($) == 0);
      if (sd::ref_dec(state)) free_header();
    }
  }

  void after() {
    RL_ASSERT(frames_destroyed($) == 1);
    RL_ASSERT(headers_freed($) == 1);
    RL_ASSERT(waiter.refs.load(std::memory_order_relaxed) == 0);
  }
};

}  // namespace

int main() { return spool::model::run_model<JoinDropModel>("join_drop", 200000); }
