// Model of a ScheduledIo's waiters (src/driver/io/scheduled_io.hpp): the owner of a
// direction's AtomicWaker and a queued waiter against the driver's set_readiness.
//
// Two tasks wait to read one registration whose readiness was used up; a third thread is
// the driver, which reports one edge. Whichever task claims the owner slot, and wherever the
// edge falls (before, between or after a waiter's first look and its queueing RMW), suite
// `both_wait` checks:
//  - no lost wake-up: each task either sees the readiness or is woken after its last pending
//    poll (park_until_woken asserts it), then leaves its place;
//  - no waker leaked or used after its drop: once the registration is gone each task's
//    reference count is back to zero (the counted wakers' liveness flags are Relacy vars).
// Suite `one_dropped`: task 0 waits once and is dropped (its future's IoWaiter destroyed)
// while task 1 waits; task 1 is still woken, and task 0's waker is dropped, not woken later.
// Suite `two_edges`: the driver makes two items readable, one edge each; a task that is
// ready takes an item if one is left, else it has met EAGAIN: it clears the readiness it saw
// (as IoSource::poll_io does) and waits again (the woken waiter queues anew). Each task
// must get its item.
#include <optional>

#include "driver/io/scheduled_io.hpp"
#include "model/sync_model.hpp"

// The one out-of-line member of IoWaiter (src/net/io_source.cpp holds it in the library).
void spool::detail::IoWaiter::leave_slow(bool cancel) noexcept { io_->leave(*this, cancel); }

namespace {

using spool::detail::IoWaiter;
using spool::detail::ScheduledIo;
using spool::model::Pool;
using spool::model::Task;

enum class Suite { kBothWait, kOneDropped, kTwoEdges };

template <Suite kSuite>
struct WaitersModel : rl::test_suite<WaitersModel<kSuite>, 3> {
  Pool pool;
  Task tasks[2];
  std::optional<ScheduledIo> io;
  // The driver's thread is done (1, release, after its wakes): see park_until_woken.
  spool::detail::Atomic<int> done{0};
  // kTwoEdges: what the "syscall" reads. Added (release) by the driver before each edge;
  // taken by CAS (acquire) by a task whose poll was ready.
  spool::detail::Atomic<int> items{0};

  // A ready task's syscall: takes an item, or fails as EAGAIN would.
  bool take_item() {
    int n = items.load(std::memory_order_acquire);
    while (n > 0) {
      if (items.compare_exchange_weak(n, n - 1, std::memory_order_acquire)) return true;
    }
    return false;
  }

  void before() {
    io.emplace(-1);
    io->clear_readiness({0, 0}, ScheduledIo::kReadable | ScheduledIo::kWritable);
  }

  void thread(unsigned index) {
    if (index == 2) {
      for (int edge = 0; edge < (kSuite == Suite::kTwoEdges ? 2 : 1); ++edge) {
        items.fetch_add(1, std::memory_order_release);  // Release: see `items`.
        io->set_readiness(ScheduledIo::kReadable);
      }
      done.fetch_add(1, std::memory_order_release);  // Release: see `done`.
      return;
    }
    Task& task = tasks[index];
    spool::Waker w = spool::Waker::from_raw(pool.make(task));
    spool::Context cx(w);
    IoWaiter waiter;
    if (kSuite == Suite::kOneDropped && index == 0) {
      (void)io->poll_ready(cx, ScheduledIo::kReadMask, waiter);
      return;  // dropped: ~IoWaiter gives up its place, pending or not
    }
    for (;;) {
      // Relaxed: only tells that a wake came (see park_until_woken).
      const int seen = task.wakes.load(std::memory_order_relaxed);
      const spool::Poll<spool::detail::ReadyEvent> r =
          io->poll_ready(cx, ScheduledIo::kReadMask, waiter);
      if (r.is_ready()) {
        if (kSuite != Suite::kTwoEdges || take_item()) {
          waiter.leave();  // as IoSource::poll_io does once its syscall is done
          return;
        }
        io->clear_readiness(r.value(), ScheduledIo::kReadable);  // EAGAIN
        continue;
      }
      spool::model::park_until_woken(task, seen, done, 1);
    }
  }

  void after() {
    io.reset();  // drops the AtomicWaker's clone, if any
    for (Task& t : tasks) RL_ASSERT(t.refs.load(std::memory_order_relaxed) == 0);
  }
};

}  // namespace

int main() {
  using spool::model::run_model;
  if (int rc = run_model<WaitersModel<Suite::kBothWait>>("scheduled_io both_wait", 200000)) {
    return rc;
  }
  if (int rc = run_model<WaitersModel<Suite::kOneDropped>>("scheduled_io one_dropped", 200000)) {
    return rc;
  }
  return run_model<WaitersModel<Suite::kTwoEdges>>("scheduled_io two_edges", 200000);
}
