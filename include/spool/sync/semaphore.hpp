// spool::Semaphore: an async counting semaphore with FIFO waiters (tokio's batch_semaphore).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>

#include "spool/coop.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/waiter_list.hpp"

namespace spool {

/// Thrown by an acquire (its future, or try_acquire) on a closed Semaphore.
class SPOOL_API AcquireError : public std::runtime_error {
 public:
  /// The error with its message.
  AcquireError() : std::runtime_error("spool::Semaphore: acquire on a closed semaphore") {}
};

class Semaphore;
class SemaphoreAcquire;

namespace detail {
/// Semaphore::acquire(1) for spool's own primitives that read "closed" as an answer, not an
/// error (OnceCell: "set"): once the semaphore is (or gets) closed, the future is ready with
/// an empty permit instead of throwing AcquireError, so no exception is thrown per waiter.
SemaphoreAcquire acquire_one_or_empty_when_closed(Semaphore& sem);
}  // namespace detail

/// Permits held from a Semaphore: returned to it when the permit is destroyed (RAII). Move
/// only; a moved-from permit holds nothing, so destroying or releasing it is a no-op. Not
/// thread-safe (one owner), but it may be moved to and released on any thread. It must not
/// outlive its Semaphore.
class SemaphorePermit {
 public:
  /// An empty permit (holds nothing).
  SemaphorePermit() noexcept = default;
  /// Takes `o`'s permits; `o` becomes empty.
  SemaphorePermit(SemaphorePermit&& o) noexcept;
  /// Releases this permit's permits, then takes `o`'s.
  SemaphorePermit& operator=(SemaphorePermit&& o) noexcept;
  SemaphorePermit(const SemaphorePermit&) = delete;
  SemaphorePermit& operator=(const SemaphorePermit&) = delete;
  /// Returns the permits to the semaphore (the first waiters get them).
  ~SemaphorePermit() { release(); }

  /// How many permits this holds (0 once released, forgotten or moved from).
  std::size_t num_permits() const noexcept { return count_; }
  /// Returns the permits now (no-op when it holds none).
  void release() noexcept;
  /// Gives the permits up without returning them: the semaphore has that many fewer.
  void forget() noexcept {
    sem_ = nullptr;
    count_ = 0;
  }

 private:
  friend class Semaphore;
  friend class SemaphoreAcquire;
  SemaphorePermit(Semaphore* sem, std::size_t count) noexcept : sem_(sem), count_(count) {}
  Semaphore* sem_ = nullptr;
  std::size_t count_ = 0;
};

namespace detail {
class WakeList;

/// A SemaphoreAcquire's entry in its semaphore's waiter list.
struct AcquireWaiter : WaiterNode {
  /// `remaining` once close() unlinked the waiter (it gave back what the waiter had got).
  static constexpr std::size_t kClosed = SIZE_MAX;
  /// Permits still needed (0: all assigned, the waiter was unlinked; kClosed). Written under
  /// the semaphore's lock by whoever assigns permits (release, close): partial assignments
  /// relaxed, the final 0 or kClosed with release, after the waker was taken out — the owner
  /// may destroy the node as soon as it sees it. The owner reads it with acquire without the
  /// lock (pairs with that release), or relaxed under the lock.
  Atomic<std::size_t> remaining{0};
  /// The permits asked for (set before the node is linked; constant while linked).
  std::size_t requested = 0;
};
}  // namespace detail

/// The future of Semaphore::acquire: ready with a SemaphorePermit once `n` permits are
/// assigned to it, in FIFO order; throws AcquireError when the semaphore is (or gets) closed.
/// Movable until it is first polled; moving it while it waits throws std::logic_error.
/// Cancellation (destroying it): while waiting, the permits already assigned to it pass to
/// the next waiters (or back to the semaphore); once it was granted but not yet polled, all
/// `n` do. Nothing is lost. Spends one unit of the task's cooperative budget per poll.
class SPOOL_API SemaphoreAcquire {
 public:
  /// Ready with the permit; pending while it waits (it keeps the latest waker).
  Poll<SemaphorePermit> poll(Context& cx);

  /// Moves a future that does not wait (not polled yet, or done); throws std::logic_error for
  /// one that does (its node is linked in the semaphore's queue).
  SemaphoreAcquire(SemaphoreAcquire&& o) : sem_(o.sem_), n_(o.n_) {
    if (o.state_ == State::kWaiting) detail::throw_moved_while_waiting("spool::SemaphoreAcquire");
    state_ = std::exchange(o.state_, State::kDone);  // the moved-from future holds nothing
  }
  SemaphoreAcquire& operator=(SemaphoreAcquire&&) = delete;
  SemaphoreAcquire(const SemaphoreAcquire&) = delete;
  SemaphoreAcquire& operator=(const SemaphoreAcquire&) = delete;
  /// Cancels the wait, passing on whatever was assigned to it.
  ~SemaphoreAcquire();

 private:
  friend class Semaphore;
  friend SemaphoreAcquire detail::acquire_one_or_empty_when_closed(Semaphore& sem);
  enum class State : std::uint8_t { kIdle, kWaiting, kDone };
  SemaphoreAcquire(Semaphore* sem, std::size_t n) noexcept : sem_(sem), n_(n) {}
  SemaphorePermit finish() noexcept {
    state_ = State::kDone;
    return SemaphorePermit(sem_, n_);
  }
  // The semaphore is closed: AcquireError, or an empty permit when empty_when_closed_.
  Poll<SemaphorePermit> finish_closed() {
    state_ = State::kDone;
    if (!empty_when_closed_) throw AcquireError();
    return SemaphorePermit();
  }
  // A poll after the first: waiting (or a misuse).
  Poll<SemaphorePermit> poll_slow(Context& cx);

  Semaphore* sem_;
  std::size_t n_;
  State state_ = State::kIdle;
  bool empty_when_closed_ = false;  // see detail::acquire_one_or_empty_when_closed
  detail::AcquireWaiter node_;
};

/// An async counting semaphore. acquire(n) waits until `n` permits can be given to it;
/// waiters are served strictly in FIFO order: the first waiter collects permits as they are
/// released, so a large acquire at the head is not overtaken by small ones behind it
/// (tokio's batch_semaphore). An uncontended acquire or release is one CAS. Thread-safe;
/// works under any executor. Not movable (waiters point at it); it must outlive its permits
/// and acquire futures.
class SPOOL_API Semaphore {
 public:
  /// The most permits a semaphore can hold, and the most one acquire may ask for. Permits
  /// released onto max_permits available are dropped (they could only come from an
  /// add_permits while they were held).
  static constexpr std::size_t max_permits = SIZE_MAX >> 3;

  /// A semaphore with `permits` permits. Throws std::invalid_argument above max_permits.
  explicit Semaphore(std::size_t permits);
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  /// A future of `n` permits (see SemaphoreAcquire). acquire(0) is ready at once with an
  /// empty permit (unless closed). Throws std::invalid_argument when n > max_permits.
  [[nodiscard]] SemaphoreAcquire acquire(std::size_t n = 1) {
    if (n > max_permits) throw_too_many("acquire", n);
    return SemaphoreAcquire(this, n);
  }
  /// `n` permits now if they are available and nobody waits ahead (nullopt otherwise).
  /// Throws AcquireError when closed, std::invalid_argument when n > max_permits.
  [[nodiscard]] std::optional<SemaphorePermit> try_acquire(std::size_t n = 1);
  /// Adds `n` permits (the first waiters get them). Throws std::overflow_error when the
  /// available permits would exceed max_permits. Inline: an mpsc receiver returns a slot's
  /// permit with it for every value.
  void add_permits(std::size_t n) {
    if (n > max_permits - available_permits()) throw_add_overflow(n);
    if (n != 0) release(n);
  }
  /// Closes the semaphore: every waiting acquire fails with AcquireError, and so does every
  /// later acquire / try_acquire. Permits held stay valid and may still be released.
  void close();
  /// True once close() was called. An acquire load: it pairs with close()'s acq_rel RMW, so
  /// what the closer did before close() is visible once this returns true.
  bool is_closed() const noexcept {
    return (state_.load(std::memory_order_acquire) & kClosed) != 0;
  }
  /// Permits available now (0 while anyone waits).
  std::size_t available_permits() const noexcept {
    return state_.load(std::memory_order_acquire) >> kShift;
  }

 private:
  friend class SemaphorePermit;
  friend class SemaphoreAcquire;

  // state_ word: (available permits << kShift) | kClosed | kWaiters.
  //   kClosed   set once by close(), never cleared.
  //   kWaiters  the waiter list is not empty; set and cleared only under lock_. While it is
  //             set the available count is 0 (permits go to the waiters first), so lock-free
  //             acquires fail and releases take the lock.
  static constexpr std::size_t kClosed = 1;
  static constexpr std::size_t kWaiters = 2;
  static constexpr unsigned kShift = 2;

  [[noreturn]] static void throw_too_many(const char* op, std::size_t n);
  [[noreturn]] static void throw_add_overflow(std::size_t n);
  enum class Take : std::uint8_t { kTaken, kShort, kClosed };
  // Lock-free: takes `n` permits if available (acquire CAS). Fails with kShort or kClosed.
  Take try_take(std::size_t n) noexcept {
    std::size_t cur = state_.load(std::memory_order_relaxed);
    for (;;) {
      if ((cur & kClosed) != 0) return Take::kClosed;
      if ((cur >> kShift) < n) return Take::kShort;
      // Acquire: pairs with the release CAS of release() or assign_locked that returned
      // the permits.
      if (state_.compare_exchange_weak(cur, cur - (n << kShift), std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return Take::kTaken;
      }
    }
  }
  // `cur` (a state word) with `n` permits more available, at most max_permits: so the
  // count never wraps, and add_permits' check never underflows.
  static std::size_t with_permits(std::size_t cur, std::size_t n) noexcept {
    return cur + (std::min(n, max_permits - (cur >> kShift)) << kShift);
  }
  // Returns `n` permits: one CAS when nobody waits, else release_slow.
  void release(std::size_t n) noexcept {
    std::size_t cur = state_.load(std::memory_order_relaxed);
    while ((cur & kWaiters) == 0) {
      // Release: publishes the holder's writes to the next acquirer's acquire CAS.
      if (state_.compare_exchange_weak(cur, with_permits(cur, n), std::memory_order_release,
                                       std::memory_order_relaxed)) {
        return;
      }
    }
    release_slow(n);
  }
  void release_slow(std::size_t n) noexcept;
  // A first poll that could not take its permits lock-free: under the lock, takes what is
  // available and links the future's node for the rest. Ready when nothing is left to wait
  // for; throws AcquireError when closed.
  Poll<SemaphorePermit> enqueue(SemaphoreAcquire& a, const Waker& waker);
  // A later poll of a waiting future: its result, or the waker refreshed (pending).
  Poll<SemaphorePermit> repoll(SemaphoreAcquire& a, const Waker& waker);
  // The destructor of a waiting future.
  void cancel(detail::AcquireWaiter& node) noexcept;
  using Lock = std::unique_lock<detail::Mutex>;
  // Gives `n` permits to the first waiters, the rest to state_ (see semaphore.cpp).
  void assign_locked(std::size_t n, Lock& lock, detail::WakeList& wakes) noexcept;

  // Available permits, kClosed, kWaiters (see above). Lock-free acquires CAS it with
  // acquire (pairing with the release of the CAS that returned the permits); lock-free
  // releases CAS it with release. Changes of kWaiters happen under lock_.
  detail::Atomic<std::size_t> state_;
  // Guards waiters_ and the nodes linked in it.
  detail::Mutex lock_;
  detail::WaiterList waiters_;
};

inline SemaphorePermit::SemaphorePermit(SemaphorePermit&& o) noexcept
    : sem_(o.sem_), count_(o.count_) {
  o.forget();
}

inline SemaphorePermit& SemaphorePermit::operator=(SemaphorePermit&& o) noexcept {
  if (this != &o) {
    release();
    sem_ = o.sem_;
    count_ = o.count_;
    o.forget();
  }
  return *this;
}

inline SemaphoreAcquire::~SemaphoreAcquire() {
  if (state_ == State::kWaiting) sem_->cancel(node_);
}

inline Poll<SemaphorePermit> SemaphoreAcquire::poll(Context& cx) {
  if (state_ != State::kIdle) return poll_slow(cx);
  if (!detail::coop_poll_proceed(cx)) return pending;
  // The fast path inline: a first poll whose permits are there (one CAS).
  if (sem_->try_take(n_) == Semaphore::Take::kTaken) return finish();
  return sem_->enqueue(*this, cx.waker());  // short, or closed: under the lock
}

inline SemaphoreAcquire detail::acquire_one_or_empty_when_closed(Semaphore& sem) {
  SemaphoreAcquire a(&sem, 1);
  a.empty_when_closed_ = true;
  return a;
}

inline void SemaphorePermit::release() noexcept {
  if (sem_ != nullptr && count_ != 0) sem_->release(count_);
  forget();
}

}  // namespace spool
