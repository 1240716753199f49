// Model of the JoinHandle's wake-up: JOIN_WAKER on the task state word (src/task/state.hpp)
// and the join_waker slot (an AtomicWaker), as src/task/harness.cpp's join_poll_complete and
// complete() use them.
//
// Invariant: no lost wake-up. The JoinHandle polls twice (the second poll re-registers,
// with JOIN_WAKER already set) while the worker completes the task; after each poll either
// the poll saw the task complete, or the waker that poll registered is woken. And a
// JoinHandle that saw the task complete sees its output (a Relacy var: an unordered read is
// a data race).
#include <optional>

#include "model/counted_waker.hpp"
#include "model/run_model.hpp"
#include "spool/core/atomic_waker.hpp"
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
  std::optional<spool::AtomicWaker> join_waker;
  rl::var<int> output;
  rl::var<bool> second_ready;

  void before() {
    join_waker.emplace();
    output($) = 0;
  }

  // harness.cpp join_poll_complete.
  bool poll(const spool::Waker& w) {
    if (sd::transition_to_join_waker_set(state)) return true;
    join_waker->register_waker(w);
    return (state.load(std::memory_order_acquire) & sd::kComplete) != 0;
  }

  void thread(unsigned index) {
    if (index == 0) {
      // harness.cpp complete(), with the JoinHandle alive: one CAS while it has registered no
      // waker, else COMPLETE, then the wake.
      output($) = 42;
      std::uint64_t cur = state.load(std::memory_order_acquire);
      while (!(cur & sd::kJoinWaker)) {
        if (sd::transition_to_complete_for_join(state, cur, 1)) return;
      }
      const std::uint64_t prev = sd::transition_to_complete(state);
      if (prev & sd::kJoinWaker) join_waker->wake();
    } else {
      spool::Waker w1 = spool::Waker::from_raw(pool.make(first));
      spool::Waker w2 = spool::Waker::from_raw(pool.make(second));
      if (poll(w1)) {
        RL_ASSERT(output($) == 42);
        second_ready($) = true;
        return;
      }
      second_ready($) = poll(w2);
      if (second_ready($)) RL_ASSERT(output($) == 42);
    }
  }

  void after() {
    RL_ASSERT(second_ready($) || second.wakes.load(std::memory_order_relaxed) >= 1);
    join_waker.reset();  // drops the registered clone, if any
    RL_ASSERT(first.refs.load(std::memory_order_relaxed) == 0);
    RL_ASSERT(second.refs.load(std::memory_order_relaxed) == 0);
  }
};

}  // namespace

int main() { return spool::model::run_model<JoinWakerModel>("join_waker", 200000); }
