// Model of a JoinHandle that polls, then is dropped, while a worker completes its task:
// join_poll_complete and join_drop (src/task/harness.cpp) against complete(), that is
// state.hpp's complete_claimed, on all three of its paths (one CAS while no waker is
// registered; COMPLETE, then the wake; the JoinHandle gone, so the frame goes and
// completing and letting go are one RMW, or none when the completer is left alone).
//
// Invariant: the frame is destroyed exactly once and after the output was written, the
// header is freed exactly once and after every other use of it (the join waker slot's read
// by the wake included), and no waker reference leaks. A third thread drops a Waker clone,
// so any of the three may free the header. The frame and the header are Relacy vars: a
// destruction not ordered after the other side's accesses is reported as a race. Each of
// these weakenings fails it: the JoinHandle's drop CAS relaxed, or its loads of COMPLETE
// relaxed; complete()'s one-RMW release (complete_and_release) or its COMPLETE RMW made
// acquire only; ref_dec made release only or acquire only. complete() and join_drop are
// state.hpp's complete_claimed and drop_join_interest, which the runtime runs too, so the
// order of their steps is checked as well: the frame destroyed after the releasing RMW, or
// the scheduler pin written after the last reference's drop, fails it.
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
  rl::var<int> pin;     // the header's scheduler_pin
  rl::var<int> header;  // stands for the header's fields, read by each side before it lets go

  void before() {
    join_waker.emplace();
    output($) = 0;
    frames_destroyed($) = 0;
    headers_freed($) = 0;
    header($) = 0;
    pin($) = 0;
  }

  void destroy_frame() {
    RL_ASSERT(frames_destroyed($) == 0);
    frames_destroyed($) = 1;
    output($) = -1;  // the frame's destructors: a write racing any unordered access
  }

  void dealloc() { free_header(); }
  void free_header() {
    RL_ASSERT(frames_destroyed($) == 1);  // a read: races a destruction not ordered before it
    RL_ASSERT(headers_freed($) == 0);
    headers_freed($) = 1;
    header($) = -1;
    (void)pin($);        // ~TaskHeader reads scheduler_pin
    join_waker.reset();  // ~TaskHeader drops the slot's waker
  }

  // complete_claimed's hook before the RMW that may let go: the runtime may write the
  // header's scheduler_pin there (pin_if_referenced), a write the free must come after.
  void before_release(std::uint64_t) {
    RL_ASSERT(headers_freed($) == 0);
    pin($) = 1;
  }
  void wake_join() { join_waker->wake_by_ref(); }

  // harness.cpp complete() with own = 1 (the claim's reference).
  void complete() {
    output($) = 42;
    RL_ASSERT(header($) == 0);
    sd::complete_claimed(state, 1, *this);
  }

  // The JoinHandle: one poll (join_poll_complete), then its drop (join_drop).
  void join_handle() {
    {
      spool::Waker w = spool::Waker::from_raw(pool.make(waiter));
      if (sd::join_register_waker(state, *join_waker, w)) RL_ASSERT(output($) == 42);
    }
    RL_ASSERT(header($) == 0);
    sd::drop_join_interest(state, *this);
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
