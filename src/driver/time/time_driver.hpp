// TimeDriver: the time layer of the driver stack — sharded timer wheels, fired by the thread
// in the driver.
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
  std::uint64_t parks = 0;      // parks in it (zero timeouts too)
  std::size_t wheels = 0;       // shards (one wheel each)
};

// Parks the layer below (`inner`) with the next deadline as timeout, then fires the timers
// that came due. park() is called by the thread in the driver only; the rest by any thread.
// One wheel per worker, each behind its own spin lock, so one worker's timers never contend
// with another's; park locks a shard only when its lock-free next deadline is due
// (docs/time.md, "Sharding").
class TimeDriver final : public Park {
 public:
  // `resolution`: one wheel tick. `shards` ≥ 1. `can_auto_advance`: whether a paused clock
  // may jump to the next deadline now (no blocking call, no runnable task); null: always.
  TimeDriver(std::shared_ptr<Park> inner, std::chrono::nanoseconds resolution, bool start_paused,
             std::uint32_t shards, std::function<bool()> can_auto_advance);
  ~TimeDriver() override;

  // Called by arm when it lowers a deadline with nobody in the driver (the hand-over). Set
  // once, before the first arm.
  void set_on_unwatched_arm(std::function<void()> fn) { on_unwatched_arm_ = std::move(fn); }

  // --- Park (the thread in the driver) ---
  void park(std::optional<std::chrono::nanoseconds> timeout) override;
  // Who parks decides whether a paused clock may jump: never kBusy; kScheduler (no task to
  // run) when can_auto_advance allows; kOutside (a hook park) only while, besides, no
  // Runtime::block_on runs. Set by the thread in the driver.
  enum class Parker { kBusy, kScheduler, kOutside };
  void set_parker(Parker p) noexcept { parker_ = p; }
  // ±1 as a Runtime::block_on begins / ends. Waits for a paused clock's jump in progress: only
  // the runtime's own thread may move the clock under a block_on.
  void add_block_on(int delta) noexcept;
  // A hint (relaxed): whether a Runtime::block_on call runs. try_jump decides under its mutex.
  bool block_on_running() const noexcept { return block_ons_.load(std::memory_order_relaxed) != 0; }
  void unpark() noexcept override;

  // --- Timers (any thread) ---
  // Arms idle `e` for `deadline` (fired at once if past, shut down if the driver is); wakes
  // the thread in the driver if it parks for a later deadline. The waker to wake is the one
  // `e` holds (entry_waker.hpp).
  void arm(TimerEntry& e, Clock::time_point deadline);
  // Armed `e` (polled again): keeps `w` as its waker unless it wakes the same task; returns
  // kArmed, or the state the driver moved `e` to meanwhile (kFired, kShutdown).
  std::uint32_t update_waker(TimerEntry& e, const Waker& w);
  // Unlinks `e` if still armed (cancel, reset); a fired or shut-down entry keeps its state.
  void disarm(TimerEntry& e) noexcept;
  // Fires every timer due by now.
  void process();
  // Fires every timer as shut down and refuses later arms (the runtime is going away).
  void shutdown();

  Clock& clock() noexcept { return clock_; }
  // True while some timer is armed.
  bool has_timers() const noexcept;
  // Cheap: reads words written only when a shard's earliest deadline changes.
  bool has_deadline() const noexcept { return next_expiration() != kNever; }
  // True if some timer is due by now (reads the clock only when a deadline exists).
  bool has_due_timer() const;
  TimerCounters counters() const noexcept;

  // The calling thread's shard (a worker's index; else a per-thread counter): contention only.
  static void set_thread_shard(std::uint32_t index) noexcept;

 private:
  struct Shard;
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};

  // The driver's time: nanoseconds since origin_ (0 for earlier instants), the wheels' unit.
  std::uint64_t time_of(Clock::time_point t) const noexcept;
  Clock::time_point instant_of(std::uint64_t time) const noexcept;  // saturating
  std::uint64_t next_expiration() const noexcept;  // min over the shards (kNever: none)
  // When the thread in the driver wakes: next_expiration(), or the latest next time of the
  // shards whose next times fall in its tick, so that a tick spread over several wheels
  // fires in one wake-up, as with one wheel (never after the tick's end).
  std::uint64_t wake_time() const noexcept;
  std::uint64_t tick_of(std::uint64_t time) const noexcept;  // the tick `time` falls in
  Shard& shard_for_thread() noexcept;
  // Moves each timer of `s` due by `now` to `state` (kFired or kShutdown) and wakes its task.
  void expire(Shard& s, std::uint64_t now, std::uint32_t state);
  void park_for(std::optional<std::chrono::nanoseconds> timeout);
  // The paused clock's jump to `next` (the driver's time), unless something forbids it now.
  void try_jump(std::uint64_t next);
  // can_auto_advance_'s answer (true when it is null), under jump_mutex_.
  bool may_auto_advance();

  const std::shared_ptr<Park> inner_;
  const std::uint64_t tick_length_;  // the wheels' tick, in the driver's time (ns)
  Clock clock_;
  // Time 0 of the wheels (after clock_, which it reads).
  const Clock::time_point origin_;
  // Guarded by jump_mutex_; shutdown clears it (a hook park may outlive the runtime).
  std::function<bool()> can_auto_advance_;
  Parker parker_ = Parker::kBusy;  // the thread in the driver's only
  // Held by a jump (try_jump) while it decides and moves the clock; orders it with
  // add_block_on and shutdown.
  std::mutex jump_mutex_;
  // Runtime::block_on calls in progress: written relaxed under jump_mutex_ (which orders it
  // with try_jump); read relaxed as a hint by Driver::park, again after the driver lock's
  // acquire. A later block_on is caught by block_on_began's unpark (sticky, and unparked_),
  // which ends the park and its jump; a later pause by pause()'s unpark.
  Atomic<std::uint32_t> block_ons_{0};
  std::vector<std::unique_ptr<Shard>> shards_;
  // The time the thread in the driver wakes at (kNever: only by an unpark; 0: none parked; a
  // wheel never fires at 0). Stored seq_cst by park before it re-reads the shards' next and
  // when it stops; read seq_cst by arm after it lowered one. Store buffering: park sees the
  // lowered next, or arm sees the time (unparks) or the 0 (hands over).
  Atomic<std::uint64_t> wake_at_{0};
  std::function<void()> on_unwatched_arm_;
  // Set (relaxed) by every unpark; exchanged (relaxed) by a park of a paused clock: woken
  // meanwhile, it must not jump.
  Atomic<bool> unparked_{false};
  // Set once by shutdown, under every shard's lock in turn; read by arm under its shard's
  // lock (relaxed both: the lock orders them).
  Atomic<bool> shut_down_{false};
  // Relaxed increments by the thread in the driver; read by counters().
  Atomic<std::uint64_t> parks_{0};
};

}  // namespace spool::detail
