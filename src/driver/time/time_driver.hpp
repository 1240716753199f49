// TimeDriver: the time layer of the driver stack — sharded timer wheels, fired as the
// driver's holder parks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "driver/park.hpp"
#include "driver/time/clock.hpp"
#include "driver/time/wheel.hpp"
#include "spool/detail/spin_lock.hpp"
#include "spool/detail/timer_entry.hpp"

namespace spool::detail {

// The counters of a time driver (cumulative).
struct TimerCounters {
  std::uint64_t armed = 0;      // timers inserted into a wheel (first arm and each reset)
  std::uint64_t fired = 0;      // timers whose deadline passed (woken by the driver)
  std::uint64_t cancelled = 0;  // armed timers removed before their deadline
  std::uint64_t parks = 0;      // times the driver's holder parked in it (zero timeouts too)
  std::size_t wheels = 0;       // shards (one wheel each)
};

// The time layer: it wraps the layer below (`inner`: the I/O driver, or the thread
// parker) and parks it with the next timer deadline as timeout, then fires the timers
// that came due. park() is called by the driver's holder only (driver/driver.hpp); arm,
// disarm, process and shutdown by any thread.
//
// Sharding: one timer wheel per worker, each behind its own spin lock. A timer is armed in
// the shard of the thread that first arms it (a worker's own; other threads by a per-thread
// index), so arming and cancelling from the tasks of one worker never contend with another
// worker, and a cancel from another thread takes only that timer's shard lock. The holder
// reads each shard's next deadline without a lock and locks a shard only when it has
// something due. (docs/time.md compares this with one shared wheel on W8.)
class TimeDriver final : public Park {
 public:
  // `resolution`: the length of one wheel tick. `shards` ≥ 1. `can_auto_advance` tells a
  // paused clock whether it may jump to the next deadline when the holder would park (no
  // blocking call runs and no task is runnable); null means always.
  TimeDriver(std::shared_ptr<Park> inner, std::chrono::nanoseconds resolution, bool start_paused,
             std::uint32_t shards, std::function<bool()> can_auto_advance);
  ~TimeDriver() override;

  // Called by arm when it lowers a deadline with no holder parked: the scheduler sends a
  // thread into the driver. Set once, before the first arm.
  void set_on_unwatched_arm(std::function<void()> fn) { on_unwatched_arm_ = std::move(fn); }

  // --- Park (the holder) ---
  void park(std::optional<std::chrono::nanoseconds> timeout) override;
  // Who parks (holder only), which decides whether a paused clock may jump to the next
  // deadline: never for kBusy; for kScheduler (the scheduler's thread, with no task to run)
  // when can_auto_advance allows; for kOutside (a thread that knows nothing of the tasks:
  // spool::block_on on another thread, the background thread) only while, besides, no
  // Runtime::block_on call runs (add_block_on).
  enum class Parker { kBusy, kScheduler, kOutside };
  void set_parker(Parker p) noexcept { parker_ = p; }
  // Counts the Runtime::block_on calls in progress (+1 when one begins, -1 when it ends).
  // Waits for a jump of the paused clock in progress, so that a block_on never sees the
  // clock move under it unless a park of its runtime's own thread moved it.
  void add_block_on(int delta) noexcept;
  // A hint (relaxed): whether a Runtime::block_on call runs. try_jump decides under its mutex.
  bool block_on_running() const noexcept { return block_ons_.load(std::memory_order_relaxed) != 0; }
  void unpark() noexcept override;

  // --- Timers (any thread) ---
  // Arms `e` (idle, not linked) for `deadline`: links it into a shard's wheel, or marks it
  // fired at once if the deadline has passed, or shut down if the driver is. Wakes the
  // parked holder when the deadline is earlier than the one it parks for.
  void arm(TimerEntry& e, Clock::time_point deadline);
  // Takes an armed entry out of its wheel if it is still there (cancel, or before reset);
  // the entry is idle afterwards unless it had fired or shut down (those states stay).
  void disarm(TimerEntry& e) noexcept;
  // Fires every timer due by now.
  void process();
  // Fires every timer as shut down and refuses later arms (the runtime is going away).
  void shutdown();

  Clock& clock() noexcept { return clock_; }
  // True while some timer is armed.
  bool has_timers() const noexcept;
  // False when no shard has a deadline (cheap: reads words written only when a shard's
  // earliest deadline changes, not on every arm).
  bool has_deadline() const noexcept { return next_expiration() != kNever; }
  // True if some timer is due by now (reads the clock only when a deadline exists).
  bool has_due_timer() const;
  TimerCounters counters() const noexcept;

  // Which shard timers armed on the calling thread go to (a worker sets its index; other
  // threads get one by a per-thread counter). Not a correctness matter, only contention.
  static void set_thread_shard(std::uint32_t index) noexcept;

 private:
  struct Shard;
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};

  std::uint64_t tick_of(Clock::time_point t) const noexcept;  // rounded up: never early
  std::uint64_t now_tick() const;                             // rounded down
  Clock::time_point instant_of(std::uint64_t tick) const noexcept;
  std::uint64_t next_expiration() const noexcept;  // min over the shards (kNever: none)
  Shard& shard_for_thread() noexcept;
  // Under `s`'s lock: unlinks every timer due by `now`, moves it to `state` (kFired or
  // kShutdown) and takes its waker into `to_wake`, to be woken after the lock is released.
  void expire_locked(Shard& s, std::uint64_t now, std::uint32_t state, std::vector<Waker>& to_wake);
  void park_for(std::optional<std::chrono::nanoseconds> timeout);
  // The paused clock's jump to `next` (a tick), unless something forbids it now.
  void try_jump(std::uint64_t next);
  // can_auto_advance_'s answer (true when it is null), under jump_mutex_.
  bool may_auto_advance();

  const std::shared_ptr<Park> inner_;
  const std::chrono::nanoseconds resolution_;
  Clock clock_;
  // Tick 0: where the clock stood when the driver was made. A start_paused clock thus stands
  // on a tick boundary, so that a whole number of ticks slept and then advanced fires exactly
  // at the advance that reaches the deadline (declared after clock_, which it reads).
  const Clock::time_point origin_;
  // Guarded by jump_mutex_ (shutdown replaces it: it reads the runtime, which a thread
  // parked through the face may outlive).
  std::function<bool()> can_auto_advance_;
  Parker parker_ = Parker::kBusy;  // written and read by the holder only (see set_parker)
  // Orders the paused clock's jumps (try_jump) with add_block_on and shutdown: a jump
  // decides and moves the clock while holding it.
  std::mutex jump_mutex_;
  // Runtime::block_on calls in progress: written under jump_mutex_ (relaxed: the mutex
  // orders it with try_jump's read); read relaxed without it as a hint by Driver::park, which
  // re-reads it after taking the driver's lock (whose acquire orders it after a block_on's
  // entry that happened before the previous holder released the lock). An entry after that
  // is caught by block_on_began's unpark while the clock is paused (a sticky token, and
  // unparked_), which ends the holder's park and cancels its jump; a clock paused later is
  // caught by pause()'s unpark.
  Atomic<std::uint32_t> block_ons_{0};
  std::vector<std::unique_ptr<Shard>> shards_;
  // The tick the parked holder wakes at by itself (kNever: only an unpark; 0: none parked).
  // Stored seq_cst by the holder before it re-reads the shards' next deadlines and when it
  // stops parking; read seq_cst by arm after it lowered one. Store buffering: the holder
  // sees the deadline, or arm sees the wake-up (unparks) or the 0 (hands the driver over).
  Atomic<std::uint64_t> wake_at_{0};
  std::function<void()> on_unwatched_arm_;
  // Set (relaxed) by every unpark; exchanged (relaxed) by a paused holder's park to tell
  // whether something was woken meanwhile (then it must not jump the clock).
  Atomic<bool> unparked_{false};
  // Set once by shutdown, under every shard's lock in turn; read by arm under its shard's
  // lock (relaxed both: the lock orders them).
  Atomic<bool> shut_down_{false};
  // Written by the holder only (relaxed increments); read by counters().
  Atomic<std::uint64_t> parks_{0};
};

}  // namespace spool::detail
