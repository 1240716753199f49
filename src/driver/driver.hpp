// Driver: the top of a driver stack (time → I/O → thread parker). One thread at a time is in
// the driver (the driver lock, as tokio's TryLock<Driver>); the others park on their own
// parkers. Words: docs/scheduler.md, "Words".
#pragma once

#include <atomic>
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
#include "driver/io/thread_ring.hpp"
#include "driver/thread_parker.hpp"
#include "driver/time/time_driver.hpp"
#include "spool/metrics.hpp"

namespace spool::detail {

// One runtime's driver (or the process-wide one of timers made outside any runtime). Entered
// three ways: by the scheduler's threads (park_thread, maintain, busy_poll); by a hook park
// (park / unpark: any executor whose reactor slot holds it, e.g. spool::block_on), which waits
// for the driver when the lock is taken; by the background driver thread (ensure_driven), for
// timers polled where no executor can park in it. A paused clock may jump only when no task
// is runnable: while a Runtime::block_on runs, only the runtime's own thread knows that, so a
// hook park then waits instead of entering (docs/time.md, "Paused clock").
class Driver final : public ReactorHook, public std::enable_shared_from_this<Driver> {
 public:
  struct Options {
    std::chrono::nanoseconds timer_resolution = std::chrono::milliseconds(1);
    bool start_paused = false;
    std::uint32_t shards = 1;                // timer wheels (one per worker)
    std::function<bool()> can_auto_advance;  // see TimeDriver
    // A multi-thread runtime's workers enter it for as long as it lives: no background thread.
    bool always_driven = false;
    IoBackend io_backend = IoBackend::kEpoll;  // kEpoll or kIoUring (resolve_io_backend)
  };
  explicit Driver(Options options);
  ~Driver() override;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // --- Hook parks (any thread whose reactor slot holds this driver) ---
  void park(std::optional<std::chrono::nanoseconds> timeout) override;
  void unpark() noexcept override;

  // --- For the schedulers ---
  // Parks in the driver if it is free, else on `own`, until `own` is unparked (in the driver
  // also until it fired wakers, or spuriously). True if it parked in the driver. With files in
  // flight on this thread's ring (thread_ring.hpp), a completion unparks it too, and what came
  // is delivered before it returns (at once, without a park, if something waits already).
  // `state`, if given, says kInDriver while it parks in the driver (the caller says the rest).
  bool park_thread(ThreadParker& own, std::atomic<WorkerState>* state = nullptr);
  // Maintenance: a zero-timeout poll if the driver is free, then a hand-over if a thread
  // parked without the driver meanwhile.
  void maintain();
  // Builder::busy_poll: zero-timeout polls until `has_work()` or `budget` ends. Skipped when
  // the driver is taken, no socket was ever registered, or the clock is paused (it may move
  // only once every thread is idle). True if `has_work()` ended it.
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
      // This thread's own ring too: its sockets' sends and receives complete there.
      (void)reap_this_thread_ring();
      found = has_work();
    } while (!found && std::chrono::steady_clock::now() < end);
    unlock();
    return found;
  }
  // maintain(), only if a timer is due (for checks between polls, not only every tick batch).
  void maintain_if_due();
  // The hand-over: wakes one of the scheduler's parked threads, which parks in the driver
  // again. Called when a hook park leaves the driver or a timer is armed with nobody in it
  // (a timer wakes only a thread in the driver). Cleared by shutdown: the driver outlives
  // the scheduler.
  void set_hand_over(std::function<void()> hand_over);
  // A Runtime::block_on on this (current-thread) runtime begins / ends: while one runs, hook
  // parks of a paused clock wait instead of entering. Both wake waiting hook parks to decide
  // again; beginning also waits for a clock jump in progress.
  void block_on_began() noexcept;
  void block_on_ended() noexcept;

  TimeDriver& time() noexcept { return *time_; }
  IoDriver& io() noexcept { return *io_; }
  // Starts the background driver thread once (it keeps the driver alive until shutdown).
  // Throws std::system_error when it cannot start.
  void ensure_driven();
  // Stops the background thread (waits for it, unless on it), then shuts every timer and
  // I/O registration down. Idempotent.
  void shutdown();

  // The driver of timers made outside every runtime (lives as long as the process).
  static const std::shared_ptr<Driver>& global();

 private:
  bool try_lock() noexcept { return lock_.try_lock(); }
  void unlock() noexcept;
  void hand_over();  // calls the scheduler's hand-over, if set
  // A hook park that cannot enter: waits for an unpark, the deadline or (`until_released`)
  // the lock's release. True for the release: the caller tries the lock again.
  bool wait_for_driver(std::optional<std::chrono::steady_clock::time_point> deadline,
                       bool until_released);
  void notify_waiting_threads() noexcept;
  void end_waits() noexcept;
  void run_background();

  const bool always_driven_;
  std::mutex hand_over_mutex_;
  std::function<void()> hand_over_;  // guarded by hand_over_mutex_
  std::shared_ptr<ThreadParker> bottom_;
  std::shared_ptr<IoDriver> io_;
  std::shared_ptr<TimeDriver> time_;
  // unlock() stores it, then loads waiting_threads_ (seq_cst): store buffering with
  // wait_for_driver's increment and then load of the lock: a waiter sees it free or is woken.
  DriverLock lock_;
  // Hook unparks and end_waits calls so far: fetch_add (seq_cst) before they load
  // waiting_threads_; loaded (seq_cst) by waiters after their increment (same pairing). Each
  // thread remembers the value it last left with, so an unpark just before its wait counts.
  Atomic<std::uint64_t> epoch_{0};
  // Threads in wait_for_driver(): seq_cst increment / decrement under wait_mutex_.
  Atomic<std::uint32_t> waiting_threads_{0};
  std::mutex wait_mutex_;
  std::condition_variable wait_cv_;
  // The background thread (detached, owns a shared_ptr): started_ is stored (release) under
  // background_mutex_, read (acquire) as the fast path; stop_ is stored (release) by shutdown,
  // read (acquire) by its loop; shutdown then waits for background_running_ to be false.
  std::mutex background_mutex_;
  std::condition_variable background_exited_;
  bool background_running_ = false;  // guarded by background_mutex_
  std::thread::id background_id_;    // guarded by background_mutex_
  Atomic<bool> started_{false};
  Atomic<bool> stop_{false};
};

}  // namespace spool::detail
