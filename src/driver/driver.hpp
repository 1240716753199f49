// Driver: the top of a driver stack (time → I/O (epoll or io_uring) → thread parker), shared by the
// threads that park in it: one holds it at a time (a try-lock, as tokio's TryLock<Driver>), the
// others park on their own parkers.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "driver/driver_lock.hpp"
#include "driver/io/io_driver.hpp"
#include "driver/thread_parker.hpp"
#include "driver/time/time_driver.hpp"

namespace spool::detail {

// One runtime's driver stack (or the process-wide one that timers made outside any runtime
// use). Three ways to be driven:
//  - The schedulers' threads (park_thread, maintain): a thread that would park takes the
//    try-lock and parks in the stack, so it waits for timers (and, with the I/O driver, for
//    I/O) while it waits for work; a thread that finds the lock taken parks on its own
//    ThreadParker. Unparking a thread parked in the stack interrupts the stack.
//  - Any executor whose reactor slot holds it (the ReactorHook face: park / unpark): e.g.
//    spool::block_on polling a spool timer. The face takes the try-lock too; a thread that
//    cannot, follows: it waits until an unpark, the timeout, or the lock's release (then it
//    takes over). Every face unpark wakes every follower (spurious returns are allowed).
//  - A background thread (ensure_driven), started when a timer is polled by an executor
//    that cannot park in this driver (its slot is absent or holds another reactor): it
//    parks through the face forever, so the timers fire even if no executor drives. (Not
//    for a multi-thread runtime's driver, which its workers always drive.)
// While the clock is paused and a Runtime::block_on runs, the face never parks in the stack:
// only the runtime's own thread, when it has no task to run, may drive (and make time jump).
// While none runs (a current-thread runtime between block_on calls), the face drives, and
// time jumps to the next deadline if no task is runnable (as the idle runtime thread would
// do), so a timer of a paused runtime awaited elsewhere fires instead of waiting forever;
// with a runnable task it waits until a block_on has run it.
class Driver final : public ReactorHook, public std::enable_shared_from_this<Driver> {
 public:
  struct Options {
    std::chrono::nanoseconds timer_resolution = std::chrono::milliseconds(1);
    bool start_paused = false;
    std::uint32_t shards = 1;                // timer wheels (one per worker)
    std::function<bool()> can_auto_advance;  // see TimeDriver
    // Some scheduler thread drives it as long as it lives (a multi-thread runtime: idle
    // workers park in it, busy ones poll it at their maintenance tick), so a timer that
    // cannot install it needs no background thread.
    bool always_driven = false;
    IoBackend io_backend = IoBackend::kEpoll;  // kEpoll or kIoUring (resolve_io_backend)
  };
  explicit Driver(Options options);
  ~Driver() override;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // --- The ReactorHook face (any thread whose slot holds this driver) ---
  void park(std::optional<std::chrono::nanoseconds> timeout) override;
  void unpark() noexcept override;

  // --- For the schedulers ---
  // Parks the calling thread until `own` is unparked (or, holding the driver, until it
  // fired timers — spuriously too): in the stack if the driver is free, else on `own`.
  // True if it parked in the driver.
  bool park_thread(ThreadParker& own);
  // The maintenance tick: polls the stack with a zero timeout (firing due timers) if the
  // driver is free; if a thread parked meanwhile without it, hands it over (set_handoff).
  void maintain();
  // Busy polling (Builder::busy_poll), for a scheduler thread that ran out of work: polls
  // the stack with a zero timeout over and over, while `has_work()` is false, for up to
  // `budget`; nothing if the driver is taken, no socket was ever registered (the I/O layer is
  // not active) or the clock is paused (a paused clock moves only once every thread is
  // idle). True if `has_work()` ended it: the caller runs its work instead of parking.
  template <class HasWork>
  bool busy_poll(std::chrono::nanoseconds budget, HasWork&& has_work) {
    if (budget <= std::chrono::nanoseconds::zero() || !io_->active() ||
        time_->clock().is_paused() || !try_lock()) {
      return false;
    }
    const auto end = std::chrono::steady_clock::now() + budget;
    bool found = false;
    do {
      time_->park(std::chrono::nanoseconds::zero());
      found = has_work();
    } while (!found && std::chrono::steady_clock::now() < end);
    unlock();
    return found;
  }
  // maintain(), only if a timer is due by now (reads the clock when some timer is armed). For
  // a scheduler that checks between polls, not only every event_interval ticks.
  void maintain_if_due();
  // Called whenever a thread that is not the scheduler's (a face park: block_on, the
  // background thread) releases the driver: the scheduler wakes one of its parked threads,
  // which parks again in the driver (it may have parked on its own parker while the driver
  // was taken, and a timer armed later unparks only a thread parked in the driver). Cleared by
  // shutdown (the scheduler goes away after it; timers and block_on threads may keep the driver
  // longer).
  void set_handoff(std::function<void()> handoff);
  // A Runtime::block_on call on this driver's (current-thread) runtime begins / ends. While
  // one runs, a paused clock is its runtime's to move: a face follows instead of driving.
  // Beginning waits for a face's jump in progress and forbids later ones; both wake the
  // faces that wait (while the clock is paused), to decide again.
  void block_on_began() noexcept;
  void block_on_ended() noexcept;

  TimeDriver& time() noexcept { return *time_; }
  IoDriver& io() noexcept { return *io_; }
  // Starts the background thread if it is not running (it keeps the driver alive until
  // shutdown). Throws std::system_error when it cannot start (nothing drives it then).
  void ensure_driven();
  // Stops the background thread (waiting for it, unless called on it), fires every timer as
  // shut down and marks every I/O registration shut down (runtime shutdown). Idempotent.
  void shutdown();

  // The driver of timers made outside every runtime (lives as long as the process).
  static const std::shared_ptr<Driver>& global();

 private:
  bool try_lock() noexcept { return lock_.try_lock(); }
  void unlock() noexcept;
  // Calls the scheduler's hand-off, if one is set: a thread of it parks again in the driver.
  void hand_over();
  // A face park that does not drive: waits for an unpark, the deadline or — if
  // `until_released` — the lock's release. Returns true if it ended because the lock was
  // released (the caller tries to take it), false for an unpark or the deadline.
  bool follow(std::optional<std::chrono::steady_clock::time_point> deadline, bool until_released);
  void notify_followers() noexcept;
  void wake_faces() noexcept;
  void run_background();

  const bool always_driven_;
  std::mutex handoff_mutex_;
  std::function<void()> handoff_;  // guarded by handoff_mutex_
  std::shared_ptr<ThreadParker> bottom_;
  std::shared_ptr<IoDriver> io_;
  std::shared_ptr<TimeDriver> time_;
  // The try-lock. unlock() releases it, then loads followers_ (seq_cst): store buffering
  // with follow's increment, then its seq_cst load of the lock — a follower either sees the
  // lock free or is notified.
  DriverLock lock_;
  // Face unparks (and block_on calls beginning or ending on a paused clock) so far: fetch_add
  // (seq_cst) by unpark and wake_faces before they load followers_; loaded
  // (seq_cst) by followers after their increment (the same store-buffering pairing). Each
  // thread remembers the value it last returned with, so an unpark that came between its
  // ThreadParker's switch to "parked in a hook" and its wait is not lost.
  Atomic<std::uint64_t> epoch_{0};
  // Threads in follow(): incremented and decremented under follow_mutex_ (seq_cst).
  Atomic<std::uint32_t> followers_{0};
  std::mutex follow_mutex_;
  std::condition_variable follow_cv_;
  // The background thread (detached; it holds a shared_ptr to the driver): started once
  // (started_: set under background_mutex_ with release, read with acquire as the fast
  // path), stopped by shutdown (stop_: store release, read acquire by its loop), which waits on
  // background_exited_ until background_running_ is false.
  std::mutex background_mutex_;
  std::condition_variable background_exited_;
  bool background_running_ = false;  // guarded by background_mutex_
  std::thread::id background_id_;    // guarded by background_mutex_
  Atomic<bool> started_{false};
  Atomic<bool> stop_{false};
};

}  // namespace spool::detail
