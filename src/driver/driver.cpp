#include "driver/driver.hpp"

#include "driver/io/thread_ring.hpp"

#include "sync/thread.hpp"

namespace spool::detail {

namespace {

// The epoch_ the calling thread last left a hook park with, and of which driver.
struct LastEpochSeen {
  const Driver* driver = nullptr;
  std::uint64_t epoch = 0;
};
thread_local LastEpochSeen last_epoch_seen;

}  // namespace

Driver::Driver(Options options)
    : always_driven_(options.always_driven),
      bottom_(std::make_shared<ThreadParker>()),
      io_(std::make_shared<IoDriver>(bottom_, options.io_backend)),
      time_(std::make_shared<TimeDriver>(io_, options.timer_resolution, options.start_paused,
                                         options.shards, std::move(options.can_auto_advance))) {
  // A timer armed with nobody in the driver sends a parked worker in: else it would wait for
  // the next maintenance. (A current-thread runtime's thread always parks in the driver.)
  if (always_driven_) time_->set_on_unwatched_arm([this] { hand_over(); });
}

// The background thread, if one ran, has ended: it held a reference.
Driver::~Driver() { time_->shutdown(); }

void Driver::unlock() noexcept {
  lock_.unlock();
  notify_waiting_threads();
}

void Driver::notify_waiting_threads() noexcept {
  // Seq_cst, after the caller's seq_cst store (lock or epoch_): pairs with wait_for_driver.
  if (waiting_threads_.load(std::memory_order_seq_cst) == 0) return;
  { std::lock_guard lock(wait_mutex_); }  // orders the notify after a waiter's check
  wait_cv_.notify_all();
}

bool Driver::park_thread(ThreadParker& own, std::atomic<WorkerState>* state) {
  // Files in flight on this thread's own ring: the I/O layer watches the ring while the
  // thread sleeps, and what came is delivered after (its tasks wake into this thread's
  // queue). Completions already there: no sleep.
  ThreadRing* const ring =
      this_thread_ring != nullptr && this_thread_ring->busy() ? this_thread_ring : nullptr;
  if (ring != nullptr && !ring->arm(own)) {
    ring->after_park();
    return false;
  }
  bool drove = false;
  if (!lock_.try_lock_or_announce()) {
    own.park_in(nullptr);  // the thread in the driver hands it over when it leaves
  } else {
    time_->set_parker(TimeDriver::Parker::kScheduler);
    if (state != nullptr) state->store(WorkerState::kInDriver, std::memory_order_relaxed);
    own.park_in(time_);
    time_->set_parker(TimeDriver::Parker::kBusy);
    unlock();
    drove = true;
  }
  if (ring != nullptr) ring->after_park();
  return drove;
}

void Driver::set_hand_over(std::function<void()> hand_over) {
  std::lock_guard lock(hand_over_mutex_);
  hand_over_ = std::move(hand_over);
}

void Driver::block_on_began() noexcept {
  time_->add_block_on(1);                   // after a jump in progress, before any later one
  if (!time_->clock().is_paused()) return;  // a running clock's hook parks ignore block_on
  // A hook park in the driver of a paused clock leaves it, for the runtime's thread.
  time_->unpark();
  end_waits();
}

void Driver::block_on_ended() noexcept {
  time_->add_block_on(-1);
  // Paused or not: a waiter may have seen the clock paused before the block_on resumed it.
  end_waits();
}

void Driver::end_waits() noexcept {
  // Every waiting hook park returns and decides again.
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  notify_waiting_threads();
}

void Driver::maintain() {
  (void)reap_this_thread_ring();  // this thread's files, on its own ring
  // Nothing to fire: leave the lock's cache line alone (every worker comes here often).
  if (!time_->has_deadline() && !io_->active()) return;
  if (!try_lock()) return;  // the thread in the driver fires them
  time_->park(std::chrono::nanoseconds::zero());
  unlock();
  // A thread parked without the driver meanwhile: it would sleep through timers and I/O.
  if (lock_.take_announcement()) hand_over();
}

void Driver::hand_over() {
  std::lock_guard lock(hand_over_mutex_);
  if (hand_over_) hand_over_();
}

void Driver::maintain_if_due() {
  if (time_->has_due_timer()) maintain();
}

void Driver::park(std::optional<std::chrono::nanoseconds> timeout) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (timeout) {
    deadline = *timeout < std::chrono::steady_clock::time_point::max() - start
                   ? start + *timeout
                   : std::chrono::steady_clock::time_point::max();
  }
  for (;;) {
    // While a Runtime::block_on runs, only the runtime's thread may move a paused clock, so
    // a hook park waits instead of entering. Decided on every pass: both may change.
    const bool may_drive = !time_->clock().is_paused() || !time_->block_on_running();
    if (may_drive && try_lock()) {
      // Again under the lock: it orders a block_on that began before the last release.
      const bool paused = time_->clock().is_paused();
      const bool park_here = !paused || !time_->block_on_running();
      if (park_here) {
        time_->set_parker(paused ? TimeDriver::Parker::kOutside : TimeDriver::Parker::kBusy);
        time_->park(timeout);
        time_->set_parker(TimeDriver::Parker::kBusy);
      }
      unlock();
      hand_over();           // the runtime's threads may have parked without the driver meanwhile
      if (park_here) break;  // else a block_on runs: wait on the next pass
    } else if (!wait_for_driver(deadline, may_drive)) {
      break;
    }
    if (deadline) {
      timeout =
          std::max(*deadline - std::chrono::steady_clock::now(), std::chrono::nanoseconds::zero());
    }
  }
  last_epoch_seen = {this, epoch_.load(std::memory_order_seq_cst)};
}

bool Driver::wait_for_driver(std::optional<std::chrono::steady_clock::time_point> deadline,
                             bool until_released) {
  std::unique_lock lock(wait_mutex_);
  waiting_threads_.fetch_add(1, std::memory_order_seq_cst);
  // A thread new to this driver cannot tell which unparks it has seen: return at once.
  const std::uint64_t seen =
      last_epoch_seen.driver == this ? last_epoch_seen.epoch : ~std::uint64_t{0};
  bool lock_freed = false;
  auto done = [&] {
    if (epoch_.load(std::memory_order_seq_cst) != seen) return true;
    lock_freed = until_released && !lock_.is_locked();
    return lock_freed;
  };
  if (deadline) {
    wait_cv_.wait_until(lock, *deadline, done);
  } else {
    wait_cv_.wait(lock, done);
  }
  waiting_threads_.fetch_sub(1, std::memory_order_seq_cst);
  return lock_freed;
}

void Driver::unpark() noexcept {
  time_->unpark();
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  notify_waiting_threads();
}

void Driver::ensure_driven() {
  if (always_driven_ || started_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(background_mutex_);
  if (started_.load(std::memory_order_relaxed) || stop_.load(std::memory_order_acquire)) return;
  std::thread t =
      start_thread("spool-driver", [self = shared_from_this()] { self->run_background(); });
  background_id_ = t.get_id();
  background_running_ = true;
  t.detach();
  started_.store(true, std::memory_order_release);
}

void Driver::run_background() {
  while (!stop_.load(std::memory_order_acquire)) park(std::nullopt);
  std::lock_guard lock(background_mutex_);
  background_running_ = false;
  background_exited_.notify_all();
}

void Driver::shutdown() {
  set_hand_over(nullptr);
  stop_.store(true, std::memory_order_release);
  unpark();  // the background thread returns (its epoch_ bump ends a wait too), sees stop_
  {
    std::unique_lock lock(background_mutex_);
    // On the background thread itself (a waker it fired shut down), it ends in its loop.
    if (background_id_ != std::this_thread::get_id()) {
      background_exited_.wait(lock, [&] { return !background_running_; });
    }
  }
  time_->shutdown();
  io_->shutdown();
}

const std::shared_ptr<Driver>& Driver::global() {
  // Never destroyed: timers may be used after static destructors began.
  static const auto* const driver = new std::shared_ptr<Driver>(
      std::make_shared<Driver>(Options{std::chrono::milliseconds(1),
                                       false,
                                       std::max(1u, std::thread::hardware_concurrency()),
                                       {},
                                       false,
                                       resolve_io_backend(std::nullopt)}));
  return *driver;
}

}  // namespace spool::detail
