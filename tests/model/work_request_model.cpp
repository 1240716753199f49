// Model of WorkRequest (src/driver/io/work_request.hpp): how any thread asks the thread in an
// I/O driver to run its work (the signal pump) after its wait.
//
// Invariants:
//  - no lost request: once the requester has set the request and woken the thread in the
//    driver, either that thread took it and ran the work, or the request and the wake both
//    wait (the next wait returns at once and takes it);
//  - the run sees what the requester wrote before its request (a Relacy var: a read without
//    a happens-before edge from the write is a data race), even when the thread in the
//    driver takes the request after a wait that returned for another reason, before the wake
//    reached it.
// The wake is modelled as IoPoller::wake behaves: a sticky token, set (release) by the waker
// and taken (acquire) by the wait it ends; a wait that finds no token sleeps.
#include "driver/io/work_request.hpp"
#include "model/run_model.hpp"

namespace {

struct WorkRequestModel : rl::test_suite<WorkRequestModel, 2> {
  spool::detail::WorkRequest request;
  spool::detail::Atomic<bool> wake_token{false};
  rl::var<int> work;  // what the requester sets up before it asks (the pump's state)
  bool ran = false;   // the thread in the driver's
  bool asleep = false;

  void before() { work($) = 0; }

  void thread(unsigned index) {
    if (index == 0) {
      work($) = 1;
      request.set();
      wake_token.store(true, std::memory_order_release);  // IoDriver::unpark
      return;
    }
    // Its parks: the first wait returns for another reason (an event, its timeout); the
    // second waits for the wake.
    for (int park = 0; park < 2; ++park) {
      if (park == 1 && !wake_token.exchange(false, std::memory_order_acquire)) {
        asleep = true;
        return;
      }
      if (request.take()) {
        RL_ASSERT(work($) == 1);
        ran = true;
      }
    }
  }

  void after() {
    if (ran) return;
    // Not run: the thread in the driver sleeps (or will wait) with a wake due, and the request
    // waits.
    RL_ASSERT(wake_token.load(std::memory_order_relaxed) || !asleep);
    RL_ASSERT(request.take());
  }
};

}  // namespace

int main() { return spool::model::run_model<WorkRequestModel>("work_request", 200000); }
