#include "driver/driver.hpp"

#include "sync/thread.hpp"

namespace spool::detail {

namespace {

// The face epoch the calling thread last returned with, and from which driver.
struct FollowerSeen {
  const Driver* driver = nullptr;
  std::uint64_t epoch = 0;
};
thread_local FollowerSeen follower_seen;

}  // namespace

Driver::Driver(Options options)
    : always_driven_(options.always_driven),
      bottom_(std::make_shared<ThreadParker>()),
      io_(std::make_shared<IoDriver>(bottom_, options.io_backend)),
      time_(std::make_shared<TimeDriver>(io_, options.timer_resolution, options.start_paused,
                                         options.shards, std::move(options.can_auto_advance))) {
  // A timer armed while nobody parks in the driver: a scheduler thread asleep on its own
  // parker takes it (it would wait for a maintenance tick, or for good while every other
  // thread is inside a long poll).
  // (A current-thread runtime's one thread parks in the driver whenever it waits.)
  if (always_driven_) time_->set_on_unwatched_arm([this] { hand_over(); });
}

// The background thread, if one ran, has ended: it held a reference.
Driver::~Driver() { time_->shutdown(); }

void Driver::unlock() noexcept {
  lock_.unlock();
  notify_followers();
}

void Driver::notify_followers() noexcept {
  // Seq_cst: after the caller's seq_cst store (of the lock or epoch_); pairs with follow's
  // increment and its seq_cst loads of the two.
  if (followers_.load(std::memory_order_seq_cst) == 0) return;
  { std::lock_guard lock(follow_mutex_); }  // orders the notify after a follower's check
  follow_cv_.notify_all();
}

bool Driver::park_thread(ThreadParker& own) {
  if (!lock_.try_lock_or_announce()) {
    own.park_in(nullptr);  // the holder hands the driver over when it lets go (maintain)
    return false;
  }
  time_->set_parker(TimeDriver::Parker::kScheduler);
  own.park_in(time_);
  time_->set_parker(TimeDriver::Parker::kBusy);
  unlock();
  return true;
}

void Driver::set_handoff(std::function<void()> handoff) {
  std::lock_guard lock(handoff_mutex_);
  handoff_ = std::move(handoff);
}

void Driver::block_on_began() noexcept {
  time_->add_block_on(1);                   // after a jump in progress, before any later one
  if (!time_->clock().is_paused()) return;  // faces of a running clock ignore block_on calls
  // A face holding the driver of a paused clock may wait there for tasks to run (it could
  // not jump): let it go, so that the runtime's thread can take the driver.
  time_->unpark();
  wake_faces();
}

void Driver::block_on_ended() noexcept {
  time_->add_block_on(-1);
  // They may drive now. Whether the clock is paused or not: one that followed a paused clock
  // waits for this even if the block_on resumed the clock meanwhile (cheap without followers).
  wake_faces();
}

void Driver::wake_faces() noexcept {
  // Faces waiting for the lock or following return and decide again.
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  notify_followers();
}

void Driver::maintain() {
  // Nothing armed and no socket: nothing to fire, and the lock's cache line is left alone
  // (every worker comes here every event_interval ticks).
  if (!time_->has_deadline() && !io_->active()) return;
  if (!try_lock()) return;  // another thread holds it: it fires the timers
  time_->park(std::chrono::nanoseconds::zero());
  unlock();
  // A thread that meant to park in the driver parked on its own parker meanwhile: it would
  // sleep through the timers and I/O until the next maintenance tick. One takes it over.
  if (lock_.take_announcement()) hand_over();
}

void Driver::hand_over() {
  std::lock_guard lock(handoff_mutex_);
  if (handoff_) handoff_();
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
    // A paused clock moves only when the runtime finds every task waiting: while a
    // Runtime::block_on runs, a thread that knows nothing of the tasks never drives it (it
    // would hold the lock the runtime's idle thread needs); it follows, and the runtime's
    // thread fires. While none runs, this thread may drive, and the clock jumps if no task
    // is runnable either (TimeDriver::try_jump decides, under its mutex). Decided again on
    // every pass: block_on calls begin and end, and the clock may be paused or resumed.
    const bool may_drive = !time_->clock().is_paused() || !time_->block_on_running();
    if (may_drive && try_lock()) {
      // Read again with the lock held: a block_on that began before the previous holder
      // released it is seen now (the hint above may have been stale).
      const bool paused = time_->clock().is_paused();
      const bool park_here = !paused || !time_->block_on_running();
      if (park_here) {
        time_->set_parker(paused ? TimeDriver::Parker::kOutside : TimeDriver::Parker::kBusy);
        time_->park(timeout);
        time_->set_parker(TimeDriver::Parker::kBusy);
      }
      unlock();
      // The runtime's threads may have parked on their own parkers meanwhile (they found
      // the lock taken), and nothing else would send them back into the driver: an arm
      // wakes only a thread parked in it. One of them takes the driver back.
      hand_over();
      if (park_here) break;
      // Else a block_on runs: follow it, on the next pass.
    } else if (!follow(deadline, may_drive)) {
      break;
    }
    if (deadline) {
      timeout =
          std::max(*deadline - std::chrono::steady_clock::now(), std::chrono::nanoseconds::zero());
    }
  }
  follower_seen = {this, epoch_.load(std::memory_order_seq_cst)};
}

bool Driver::follow(std::optional<std::chrono::steady_clock::time_point> deadline,
                    bool until_released) {
  std::unique_lock lock(follow_mutex_);
  followers_.fetch_add(1, std::memory_order_seq_cst);
  // A thread new to this driver cannot tell which unparks it has seen: return at once.
  const std::uint64_t seen = follower_seen.driver == this ? follower_seen.epoch : ~std::uint64_t{0};
  bool lock_freed = false;
  auto done = [&] {
    if (epoch_.load(std::memory_order_seq_cst) != seen) return true;
    lock_freed = until_released && !lock_.is_locked();
    return lock_freed;
  };
  if (deadline) {
    follow_cv_.wait_until(lock, *deadline, done);
  } else {
    follow_cv_.wait(lock, done);
  }
  followers_.fetch_sub(1, std::memory_order_seq_cst);
  return lock_freed;
}

void Driver::unpark() noexcept {
  time_->unpark();
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  notify_followers();
}

void Driver::ensure_driven() {
  // Threads that never all go away (a multi-thread runtime's workers) drive it already.
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
  set_handoff(nullptr);
  stop_.store(true, std::memory_order_release);
  unpark();  // the background thread (holder or follower) returns and sees stop_; the
             // epoch it bumps ends a follow begun after the thread last checked stop_
  {
    std::unique_lock lock(background_mutex_);
    // On the background thread itself (a waker it fired shut the runtime down), it ends
    // when it returns to its loop.
    if (background_id_ != std::this_thread::get_id()) {
      background_exited_.wait(lock, [&] { return !background_running_; });
    }
  }
  time_->shutdown();
  io_->shutdown();
}

const std::shared_ptr<Driver>& Driver::global() {
  // Never destroyed: timers and their background thread may be used until the process
  // exits, after static destructors began.
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
