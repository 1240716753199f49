// Model of the JoinHandle's wake-up: JOIN_WAKER on the task state word and the join_waker
// slot (a plain Waker the bit guards), as src/task/harness.cpp's join_poll_complete
// (join_register_waker, src/task/state.hpp) and complete() use them.
//
// Invariant: no lost wake-up. The JoinHandle polls three times while the worker completes the
// task: with one waker, with another (the slot is taken back and rewritten), with the second
// again (no RMW); after the last pending poll, its waker is woken. A JoinHandle that saw the
// task complete sees its output, and the slot is never written while complete() reads it:
// the counted wakers' Relacy vars report a clone or drop that races with the wake's read.
// Each of these weakenings fails it: the set's fetch_or without release (a race on the new
// clone) or as a load + store (a lost wake), the unset without its COMPLETE check (a drop
// racing the wake), the unset's or the poll's acquire made relaxed (a race on the output),
// and no re-registration with another waker (a lost wake).
#include <optional>

#include "model/counted_waker.hpp"
#include "model/run_model.hpp"
#include "task/state.hpp"

namespace {

namespace sd = spool::detail;
using spool::model::Pool;
using spool::model::Task;

struct JoinWakerModel : rl::test_suite<JoinWakerModel, 2> {
  Pool pool;
  Task first;
  Task second;
  // Claimed by the worker; the JoinHandle and the claim hold references.
  sd::StateWord state{sd::kRunning | sd::kJoinInterest | 2 * sd::kRefOne};
  std::optional<spool::Waker> join_waker;  // the header's slot: a no-op waker at first
  rl::var<int> output;
  rl::var<bool> last_ready;

  void before() {
    join_waker.emplace();
    output($) = 0;
  }

  bool poll(const spool::Waker& w) {
    const bool ready = sd::join_register_waker(state, *join_waker, w);
    if (ready) RL_ASSERT(output($) == 42);
    return ready;
  }

  // complete_claimed's hooks. The JoinHandle lives throughout and keeps the header: no frame
  // goes and nothing is freed.
  void destroy_frame() { RL_ASSERT(false); }
  void wake_join() { join_waker->wake_by_ref(); }
  void before_release(std::uint64_t) {}
  void dealloc() { RL_ASSERT(false); }

  void thread(unsigned index) {
    if (index == 0) {
      // harness.cpp complete(), with the JoinHandle alive: one CAS while it has registered no
      // waker, else COMPLETE, then the wake.
      output($) = 42;
      sd::complete_claimed(state, 1, *this);
    } else {
      spool::Waker w1 = spool::Waker::from_raw(pool.make(first));
      spool::Waker w2 = spool::Waker::from_raw(pool.make(second));
      last_ready($) = poll(w1) || poll(w2) || poll(w2);
    }
  }

  void after() {
    RL_ASSERT(last_ready($) || second.wakes.load(std::memory_order_relaxed) >= 1);
    join_waker.reset();  // drops the registered clone, if any (with the header)
    RL_ASSERT(first.refs.load(std::memory_order_relaxed) == 0);
    RL_ASSERT(second.refs.load(std::memory_order_relaxed) == 0);
  }
};

}  // namespace

int main() { return spool::model::run_model<JoinWakerModel>("join_waker", 200000); }
