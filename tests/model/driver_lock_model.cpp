// Model of the driver's hand-over after maintenance (src/driver/driver_lock.hpp, used by
// Driver::park_thread and Driver::maintain), with the real DriverLock.
//
// Invariant: a scheduler thread that parks finds a driver: it takes the lock itself, or
// the thread in the driver, after leaving, sees its announcement and hands the driver over.
//
// Thread 0 holds the lock (a busy worker's maintenance tick), lets go and looks for an
// announcement; thread 1 is a worker about to park. Weakening the announcement's store or
// its load to release / acquire lets Relacy find the execution where both miss. (Weakened,
// the two accesses of the lock pass here: Relacy's RMW reads the latest value. The C++
// model still needs them seq_cst for the store-buffering argument, so they stay.)
#include "driver/driver_lock.hpp"
#include "model/run_model.hpp"

namespace {

namespace sd = spool::detail;

struct DriverLockModel : rl::test_suite<DriverLockModel, 2> {
  sd::DriverLock lock;
  bool handed_over = false;       // thread 0's
  bool parked_in_driver = false;  // thread 1's

  void before() { RL_ASSERT(lock.try_lock()); }

  void thread(unsigned index) {
    if (index == 0) {
      lock.unlock();
      handed_over = lock.take_announcement();
    } else {
      parked_in_driver = lock.try_lock_or_announce();
    }
  }

  void after() { RL_ASSERT(parked_in_driver || handed_over); }
};

}  // namespace

int main() { return spool::model::run_model<DriverLockModel>("driver_lock", 200000); }
