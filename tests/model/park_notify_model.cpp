// Model of the park/notify protocol of the multi-thread scheduler around Idle
// (src/scheduler/multi_thread/idle.hpp), with the real Idle and LocalQueue.
//
// Invariant: no worker stays parked while a queue holds a task and nobody is searching.
//
// Two workers: worker 0 is the last searcher and finds nothing to steal, so it parks;
// worker 1 runs a task that pushes a new task into its local queue and goes on running
// (it will not look at its queue for a long time). Either worker 0 sees the task in its
// park re-check (work_pending), or worker 1 sees no searcher and notifies worker 0.
// The worker steps follow MultiThread (multi_thread.cpp): steal_work, run_task_on's
// transition_from_searching, park, notify_parked, work_pending and push_local. The parker
// is modelled by its sticky token: a worker that parks without a token sleeps until an
// unpark sets one.
#include "model/run_model.hpp"
#include "scheduler/multi_thread/idle.hpp"
#include "scheduler/multi_thread/local_queue.hpp"

namespace {

namespace sd = spool::detail;

constexpr unsigned kWorkers = 2;

struct Item {
  int id = 0;
};

// The overflow sink (the inject queue): a capacity of 4 never overflows here.
struct NoOverflow {
  bool push(Item*) {
    RL_ASSERT(false);
    return false;
  }
  bool push_batch(Item* const*, std::size_t) {
    RL_ASSERT(false);
    return false;
  }
};

using Queue = sd::LocalQueue<4, Item*, NoOverflow>;

struct ParkNotifyModel : rl::test_suite<ParkNotifyModel, kWorkers> {
  sd::Idle idle{kWorkers};
  Queue queues[kWorkers];
  sd::Atomic<bool> unpark_token[kWorkers];  // the modelled ThreadParker: a sticky token
  bool searching[kWorkers] = {};            // Core::is_searching, each touched by its worker
  bool asleep[kWorkers] = {};               // parked and found no token
  NoOverflow sink;
  Item task{1};

  void before() {
    // Worker 0 searches; worker 1 is running a task.
    RL_ASSERT(idle.transition_to_searching());
    searching[0] = true;
  }

  // MultiThread::work_pending (there is no inject queue in this model).
  bool work_pending() {
    for (Queue& q : queues) {
      if (!q.is_empty()) return true;
    }
    return false;
  }
  // MultiThread::notify_parked, with ThreadParker::unpark's token.
  void notify_parked() {
    if (auto w = idle.worker_to_notify(spool::detail::Idle::Published::kLocalQueue))
      unpark_token[*w].store(true, std::memory_order_release);
  }
  // MultiThread::transition_from_searching.
  void transition_from_searching(unsigned w) {
    if (!searching[w]) return;
    searching[w] = false;
    if (idle.transition_from_searching() && work_pending()) notify_parked();
  }
  // MultiThread::park, up to the first block: a worker with no token sleeps.
  void park(unsigned w) {
    if (idle.transition_to_parked(w, searching[w]) && work_pending()) notify_parked();
    searching[w] = false;
    if (!unpark_token[w].exchange(false, std::memory_order_acquire)) {
      asleep[w] = true;
      return;
    }
    RL_ASSERT(!idle.is_parked(w));  // a notify took it off the sleeper list
    searching[w] = true;
  }
  // MultiThread::push_local (a task woken or spawned by the running one).
  void push_local(unsigned w, Item* t) {
    queues[w].push_back_or_overflow(t, sink, [](Item*) { RL_ASSERT(false); });
    if (!searching[w]) notify_parked();
  }

  void thread(unsigned index) {
    if (index == 0) {
      // MultiThread::steal_work: one pass over the other queues, then park.
      if (Item* t = queues[1].steal_into(queues[0])) {
        (void)t;  // run_task_on
        transition_from_searching(0);
        return;
      }
      park(0);
    } else {
      push_local(1, &task);
    }
  }

  void after() {
    const bool sleeps = asleep[0] && !unpark_token[0].load(std::memory_order_relaxed);
    RL_ASSERT(!(sleeps && work_pending() && idle.num_searching() == 0));
  }
};

}  // namespace

int main() { return spool::model::run_model<ParkNotifyModel>("park_notify", 200000); }
