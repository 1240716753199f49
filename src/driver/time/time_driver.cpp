#include "driver/time/time_driver.hpp"

#include <algorithm>
#include <mutex>

#include "driver/time/entry_waker.hpp"
#include "spool/detail/wake_list.hpp"

namespace spool::detail {

namespace {

// The longest a thread in the driver parks without looking at the clock again: a deadline days away
// is reached through a few hourly wake-ups, and no timeout arithmetic comes near overflow.
constexpr std::chrono::nanoseconds kMaxPark = std::chrono::hours(1);

constexpr std::uint32_t kNoShard = ~std::uint32_t{0};
// The shard hint of the calling thread (set_thread_shard), or kNoShard.
thread_local std::uint32_t thread_shard = kNoShard;
// Hands out shard hints to threads that have none, round robin.
// Relaxed: only the values must differ, nothing is published with them.
Atomic<std::uint32_t> next_thread_shard{0};

}  // namespace

struct alignas(64) TimeDriver::Shard {
  explicit Shard(std::uint64_t tick_length) : wheel(tick_length) {}
  SpinLock lock;
  TimerWheel wheel;  // guarded by lock
  // No later than the earliest time at which the wheel may fire a timer (kNever: empty),
  // in the driver's time (ns since origin_). Stored under lock: seq_cst when arm lowers it
  // (see wake_at_), relaxed when process raises it; read without the lock (seq_cst) by the
  // thread in the driver to choose its timeout and the shards to poll.
  Atomic<std::uint64_t> next{kNever};
  // Entries linked now; counters. Written under lock (relaxed), read by has_timers and
  // counters() (relaxed).
  Atomic<std::uint64_t> linked{0};
  Atomic<std::uint64_t> armed{0};
  Atomic<std::uint64_t> fired{0};
  Atomic<std::uint64_t> cancelled{0};
};

namespace {
void bump(Atomic<std::uint64_t>& counter, std::int64_t by = 1) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + static_cast<std::uint64_t>(by),
                std::memory_order_relaxed);
}
}  // namespace

TimeDriver::TimeDriver(std::shared_ptr<Park> inner, std::chrono::nanoseconds resolution,
                       bool start_paused, std::uint32_t shards,
                       std::function<bool()> can_auto_advance)
    : inner_(std::move(inner)),
      tick_length_(static_cast<std::uint64_t>(resolution.count())),
      clock_(start_paused),
      origin_(clock_.now()),
      can_auto_advance_(std::move(can_auto_advance)) {
  for (std::uint32_t i = 0; i < std::max<std::uint32_t>(shards, 1); ++i) {
    shards_.push_back(std::make_unique<Shard>(tick_length_));
  }
}

TimeDriver::~TimeDriver() = default;

void TimeDriver::set_thread_shard(std::uint32_t index) noexcept { thread_shard = index; }

TimeDriver::Shard& TimeDriver::shard_for_thread() noexcept {
  if (thread_shard == kNoShard) {
    thread_shard = next_thread_shard.fetch_add(1, std::memory_order_relaxed);
  }
  return *shards_[thread_shard % shards_.size()];
}

std::uint64_t TimeDriver::tick_of(std::uint64_t time) const noexcept {
  return time / tick_length_ + (time % tick_length_ != 0);
}

std::uint64_t TimeDriver::time_of(Clock::time_point t) const noexcept {
  return t <= origin_ ? 0 : static_cast<std::uint64_t>((t - origin_).count());
}

Clock::time_point TimeDriver::instant_of(std::uint64_t time) const noexcept {
  const auto room = static_cast<std::uint64_t>((Clock::time_point::max() - origin_).count());
  if (time > room) return Clock::time_point::max();
  return origin_ + std::chrono::nanoseconds(static_cast<std::int64_t>(time));
}

std::uint64_t TimeDriver::next_expiration() const noexcept {
  std::uint64_t next = kNever;
  for (const auto& s : shards_) next = std::min(next, s->next.load(std::memory_order_seq_cst));
  return next;
}

std::uint64_t TimeDriver::wake_time() const noexcept {
  const std::uint64_t first = next_expiration();
  if (first == kNever || shards_.size() == 1) return first;
  std::uint64_t wake = first;
  for (const auto& s : shards_) {
    const std::uint64_t next = s->next.load(std::memory_order_seq_cst);
    if (next != kNever && tick_of(next) == tick_of(first)) wake = std::max(wake, next);
  }
  return wake;
}

bool TimeDriver::has_due_timer() const {
  const std::uint64_t next = next_expiration();
  return next != kNever && next <= time_of(clock_.now());
}

bool TimeDriver::has_timers() const noexcept {
  return std::any_of(shards_.begin(), shards_.end(),
                     [](const auto& s) { return s->linked.load(std::memory_order_relaxed) != 0; });
}

void TimeDriver::arm(TimerEntry& e, Clock::time_point deadline) {
  if (e.shard == nullptr) e.shard = &shard_for_thread();
  Shard& s = *static_cast<Shard*>(e.shard);
  const std::uint64_t when = time_of(deadline);
  std::uint64_t fire_at = kNever;
  bool lowered = false;
  {
    std::lock_guard guard(s.lock);
    // Shutdown sets the flag under this lock before it empties this shard.
    if (shut_down_.load(std::memory_order_relaxed)) {
      e.state.store(TimerEntry::kShutdown, std::memory_order_release);
      return;
    }
    e.when = when;
    bump(s.armed);
    if (!s.wheel.insert(&e)) {  // due already
      bump(s.fired);
      e.state.store(TimerEntry::kFired, std::memory_order_release);
      return;
    }
    e.state.store(TimerEntry::kArmed, std::memory_order_relaxed);
    bump(s.linked);
    fire_at = s.wheel.earliest_fire(e);
    if (fire_at < s.next.load(std::memory_order_relaxed)) {
      s.next.store(fire_at, std::memory_order_seq_cst);
      lowered = true;
    }
  }
  if (!lowered) return;
  // Seq_cst: pairs with the thread in the driver's store of wake_at_ (see there).
  const std::uint64_t watched_until = wake_at_.load(std::memory_order_seq_cst);
  if (watched_until == 0) {
    if (on_unwatched_arm_) on_unwatched_arm_();
  } else if (fire_at < watched_until) {
    unpark();
  }
}

std::uint32_t TimeDriver::update_waker(TimerEntry& e, const Waker& w) {
  return detail::update_waker(static_cast<Shard*>(e.shard)->lock, e, w);
}

void TimeDriver::disarm(TimerEntry& e) noexcept {
  // Settled by the driver (state_of's acquire): its caller may free the entry at once. If it
  // still reads kArmed, the lock below settles it (the node may be unlinked).
  if (state_of(e) != TimerEntry::kArmed) return;
  Shard& s = *static_cast<Shard*>(e.shard);
  std::lock_guard guard(s.lock);
  if (!e.linked) return;  // fired (or shut down) meanwhile: that state stays
  s.wheel.remove(&e);
  bump(s.linked, -1);
  bump(s.cancelled);
  e.state.store(TimerEntry::kIdle, std::memory_order_relaxed);
}

void TimeDriver::expire(Shard& s, std::uint64_t now, std::uint32_t state) {
  // In batches: the lock is held for at most one batch (arms and cancels wait no longer), the
  // first tasks run while the rest are fired, and nothing is allocated.
  WakeList to_wake;
  for (bool done = false; !done;) {
    {
      std::lock_guard guard(s.lock);
      done = s.wheel.poll(now, [&](TimerNode* node) {
        // The waker is taken under the lock: once it is released the entry may be gone.
        if (std::optional<Waker> w = settle_locked(static_cast<TimerEntry&>(*node), state)) {
          to_wake.push(std::move(*w));
        }
        bump(s.linked, -1);
        if (state == TimerEntry::kFired) bump(s.fired);
        return !to_wake.full();
      });
      s.next.store(s.wheel.next_expiration().value_or(kNever), std::memory_order_relaxed);
    }
    to_wake.wake_all();
  }
}

void TimeDriver::process() {
  std::uint64_t now = kNever;  // read from the clock only if some shard has a timer
  for (const auto& sp : shards_) {
    Shard& s = *sp;
    const std::uint64_t next = s.next.load(std::memory_order_seq_cst);
    if (next == kNever) continue;
    if (now == kNever) now = time_of(clock_.now());
    if (next <= now) expire(s, now, TimerEntry::kFired);
  }
}

void TimeDriver::shutdown() {
  {
    // The runtime that answers can_auto_advance goes away after this: never ask it again.
    std::lock_guard guard(jump_mutex_);
    can_auto_advance_ = [] { return false; };
  }
  for (const auto& sp : shards_) {
    {
      std::lock_guard guard(sp->lock);
      // Relaxed: arm reads it under this same lock; an arm after it links nothing more here.
      shut_down_.store(true, std::memory_order_relaxed);
    }
    expire(*sp, kNever - 1, TimerEntry::kShutdown);
  }
}

void TimeDriver::park(std::optional<std::chrono::nanoseconds> timeout) {
  parks_.store(parks_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (timeout && *timeout <= std::chrono::nanoseconds::zero()) {
    inner_->park(timeout);  // a poll (the maintenance tick): no deadline to compute
  } else if (clock_.is_paused()) {
    const std::uint64_t next = wake_time();
    if (next != kNever && parker_ != Parker::kBusy && may_auto_advance()) {
      // Nothing runs (the thread in the driver parks only when idle): let the next deadline come at
      // once — unless an unpark says something was woken meanwhile.
      inner_->park(std::chrono::nanoseconds::zero());
      try_jump(next);
    } else {
      // A blocking call runs, or a task waits to be run: wait for them (an unpark), with
      // the paused time as timeout.
      park_for(timeout);
    }
  } else {
    park_for(timeout);
  }
  process();
}

void TimeDriver::try_jump(std::uint64_t next) {
  std::lock_guard guard(jump_mutex_);
  if (unparked_.exchange(false, std::memory_order_relaxed)) return;  // woken meanwhile
  if (parker_ == Parker::kOutside && block_ons_.load(std::memory_order_relaxed) != 0) return;
  // Again, under the mutex: a task woken or a blocking call started since the first check.
  if (can_auto_advance_ && !can_auto_advance_()) return;
  clock_.advance_to(instant_of(next));
}

bool TimeDriver::may_auto_advance() {
  std::lock_guard guard(jump_mutex_);
  return !can_auto_advance_ || can_auto_advance_();
}

void TimeDriver::add_block_on(int delta) noexcept {
  std::lock_guard guard(jump_mutex_);
  block_ons_.store(block_ons_.load(std::memory_order_relaxed) + static_cast<std::uint32_t>(delta),
                   std::memory_order_relaxed);
}

void TimeDriver::park_for(std::optional<std::chrono::nanoseconds> timeout) {
  // Publish the wake-up time, then re-read the shards (seq_cst both; arm does the mirror
  // image): a timer armed meanwhile is either seen here or unparks us.
  wake_at_.store(wake_time(), std::memory_order_seq_cst);
  const std::uint64_t next = wake_time();
  std::optional<std::chrono::nanoseconds> t = timeout;
  if (next != kNever) {
    const auto until = std::max(instant_of(next) - clock_.now(), std::chrono::nanoseconds::zero());
    t = t ? std::min(*t, until) : until;
  }
  if (!t || *t > kMaxPark) t = kMaxPark;
  inner_->park(t);
  // Not parked: an arm now hands the driver over instead (seq_cst: the same store buffering
  // as above, against the thread in the driver leaving for work without the new deadline).
  wake_at_.store(0, std::memory_order_seq_cst);
}

void TimeDriver::unpark() noexcept {
  unparked_.store(true, std::memory_order_relaxed);
  inner_->unpark();
}

TimerCounters TimeDriver::counters() const noexcept {
  TimerCounters c;
  for (const auto& s : shards_) {
    c.armed += s->armed.load(std::memory_order_relaxed);
    c.fired += s->fired.load(std::memory_order_relaxed);
    c.cancelled += s->cancelled.load(std::memory_order_relaxed);
  }
  c.parks = parks_.load(std::memory_order_relaxed);
  c.wheels = shards_.size();
  return c;
}

}  // namespace spool::detail
