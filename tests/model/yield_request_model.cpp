// Model of HighestFirst's yield protocol (src/scheduler/yield_request.hpp), with the real
// LevelCounts, higher_level_since_pick and ask_to_yield (RunQueues calls them).
//
// Invariant: a task queued above the level a poller is about to run is not missed: the
// poller sees it (and puts its own task back), or its queuer asks the poller to yield.
//
// Thread 0 queues a level-0 task (count, then ask); thread 1 is about to poll a level-1 task.
// Weakening running_level's store or load, or the count's add or load, to release / acquire
// lets Relacy find the execution where both miss (the store-buffering outcome).
#include "model/run_model.hpp"
#include "scheduler/yield_request.hpp"

namespace {

namespace sd = spool::detail;

struct YieldRequestModel : rl::test_suite<YieldRequestModel, 2> {
  sd::LevelCounts counts{2};
  sd::YieldState poller;  // idle (level 0) until thread 1 publishes its level
  bool put_back = false;  // thread 1's

  void thread(unsigned index) {
    if (index == 0) {
      counts.add(0, 1);
      sd::ask_to_yield(
          1, [&](std::size_t) -> sd::YieldState& { return poller; }, 0);
    } else {
      put_back = sd::higher_level_since_pick(poller, counts, 1);
    }
  }

  void after() { RL_ASSERT(put_back || poller.requested.load(std::memory_order_relaxed)); }
};

}  // namespace

int main() { return spool::model::run_model<YieldRequestModel>("yield_request", 200000); }
