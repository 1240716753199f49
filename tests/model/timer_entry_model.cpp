// Model of a timer entry between the future that waits on it and the time driver that fires
// it (src/driver/time/entry_waker.hpp, as Sleep::poll, TimeDriver::disarm and ::expire use
// it), with the shard's lock as a Mutex and the wheel's link as the node's `linked` flag.
//
// The future polls three times — armed with one waker, then with another (swapped under the
// lock), then the same again (kept) — stopping once a poll is ready, then drops the entry:
// disarm, and the entry's memory is freed (a write to `node`). The driver fires the entry
// if it is still linked when it gets the lock: it unlinks it (a write to `node`), settles it
// and wakes the waker it took once the lock is released. Invariants:
//  - no lost wake-up: after the last pending poll, that poll's waker is woken;
//  - the future that reads the entry settled owns it again: the driver's writes to it happen
//    before its reads and its free (`node` is a Relacy var: a race is reported);
//  - no waker is leaked or used after its drop (counted wakers).
// Each of these weakenings fails it: settle_locked's release store relaxed, or state_of's
// acquire load relaxed (a race on `node`); update_waker keeping the old waker (a lost
// wake-up).
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include "driver/time/entry_waker.hpp"
#include "model/counted_waker.hpp"
#include "model/run_model.hpp"

namespace {

namespace sd = spool::detail;
using sd::TimerEntry;
using spool::model::Pool;
using spool::model::Task;

struct TimerEntryModel : rl::test_suite<TimerEntryModel, 2> {
  Pool pool;
  Task first;
  Task second;
  sd::Mutex lock;               // the shard's
  TimerEntry entry;             // the Sleep's
  rl::var<int> node;            // the rest of the entry's memory: the wheel's links
  rl::var<bool> fired;          // the driver settled the entry (and woke the waker it took)
  rl::var<Task*> last_pending;  // whose waker the last pending poll gave (null: none pending)
  sd::Atomic<int> progress{0};  // the future's polls so far (3 once it stopped polling)

  void before() {
    node($) = 0;
    fired($) = false;
    last_pending($) = nullptr;
  }

  // Sleep::poll, with TimeDriver::arm reduced to the link under the lock.
  bool poll(const spool::Waker& w) {
    std::uint32_t state = sd::state_of(entry);
    if (state == TimerEntry::kIdle) {
      sd::set_waker_unshared(entry, w);
      {
        std::lock_guard guard(lock);
        entry.linked = true;
        node($) = 1;
        entry.state.store(TimerEntry::kArmed, std::memory_order_relaxed);
      }
      state = sd::state_of(entry);
    } else if (state == TimerEntry::kArmed) {
      state = sd::update_waker(lock, entry, w);
    }
    if (state != TimerEntry::kFired) return false;
    RL_ASSERT(node($) == 2);  // the driver's unlink
    return true;
  }

  // TimeDriver::disarm, then the entry's end (~Sleep frees it).
  void drop() {
    if (sd::state_of(entry) == TimerEntry::kArmed) {
      std::lock_guard guard(lock);
      if (entry.linked) {
        entry.linked = false;
        entry.state.store(TimerEntry::kIdle, std::memory_order_relaxed);
      }
    }
    node($) = 3;
    entry.waker.reset();
  }

  void thread(unsigned index) {
    if (index == 0) {
      // TimeDriver::expire for this one entry, at a pass of the driver that starts once the
      // future has made `after` polls (chosen by Relacy: each poll and the drop get raced).
      const int after = static_cast<int>(rl::rand(4));
      // Relaxed: only paces this thread; the entry's lock and state do the synchronising.
      while (progress.load(std::memory_order_relaxed) < after) rl::yield(1, $);
      std::optional<spool::Waker> w;
      {
        std::lock_guard guard(lock);
        if (!entry.linked) return;  // not armed yet, or given up: nothing to fire
        entry.linked = false;
        node($) = 2;
        w = sd::settle_locked(entry, TimerEntry::kFired);
        fired($) = true;
      }
      if (w) std::move(*w).wake();
    } else {
      spool::Waker w1 = spool::Waker::from_raw(pool.make(first));
      spool::Waker w2 = spool::Waker::from_raw(pool.make(second));
      const std::pair<const spool::Waker*, Task*> polls[] = {
          {&w1, &first}, {&w2, &second}, {&w2, &second}};
      for (const auto& [w, task] : polls) {
        const bool ready = poll(*w);
        last_pending($) = ready ? nullptr : task;
        progress.fetch_add(1, std::memory_order_relaxed);
        if (ready) break;
      }
      progress.store(3, std::memory_order_relaxed);  // the driver's pass may come now
      drop();
    }
  }

  void after() {
    // Fired while the future was pending: the waker of its last poll was woken.
    if (fired($) && last_pending($) != nullptr) {
      RL_ASSERT(last_pending($)->wakes.load(std::memory_order_relaxed) >= 1);
    }
    RL_ASSERT(first.refs.load(std::memory_order_relaxed) == 0);
    RL_ASSERT(second.refs.load(std::memory_order_relaxed) == 0);
  }
};

}  // namespace

int main() { return spool::model::run_model<TimerEntryModel>("timer_entry", 200000); }
