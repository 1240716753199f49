// spool::Notify: wakes one waiting task (storing a permit when none waits) or all of them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/waiter_list.hpp"

namespace spool {

class Notify;

namespace detail {
/// A Notified future's entry in its Notify's waiter list.
struct NotifyWaiter : WaiterNode {
  /// `notified`: not notified (linked, or not linked yet).
  static constexpr std::uint8_t kWaiting = 0;
  /// `notified`: unlinked by notify_one (a destroyed owner passes the notification on).
  static constexpr std::uint8_t kOne = 1;
  /// `notified`: unlinked by notify_waiters.
  static constexpr std::uint8_t kAll = 2;
  /// How the waiter was notified. Written under the Notify's lock by the notifier, with
  /// release, after the waker was taken out (the owner may destroy the node once it sees
  /// it); read by the owner with acquire (pairs with that release), without the lock.
  Atomic<std::uint8_t> notified{kWaiting};
  /// The owner's generation (Notified::generation_), for notify_waiters. Set before linking.
  std::size_t generation = 0;
};
}  // namespace detail

/// The future of Notify::notified: ready once notified. It counts as waiting from its first
/// poll; a notify_waiters() call made after it was created also completes it, even if it was
/// not polled yet (so `auto n = notify.notified(); if (!ready()) co_await n;` misses nothing).
/// Cancellation (destroying it): while waiting, it leaves the queue; if a notify_one had
/// already picked it, that notification passes on to the next waiter (or is stored as the
/// permit). Movable until it is first polled; moving it while it waits throws
/// std::logic_error. Spends one unit of the task's cooperative budget per poll.
class SPOOL_API Notified {
 public:
  /// Ready once notified; pending while it waits (it keeps the latest waker).
  Poll<void> poll(Context& cx);

  /// Moves a future that does not wait (not polled yet, or done); throws std::logic_error for
  /// one that does.
  Notified(Notified&& o);
  Notified& operator=(Notified&&) = delete;
  Notified(const Notified&) = delete;
  Notified& operator=(const Notified&) = delete;
  /// Leaves the queue, passing on a notify_one it had been given.
  ~Notified();

 private:
  friend class Notify;
  enum class State : std::uint8_t { kIdle, kWaiting, kDone };
  Notified(Notify* notify, std::size_t generation) noexcept
      : notify_(notify), generation_(generation) {}

  Notify* notify_;
  std::size_t generation_;  // notify_waiters calls made before this future was created
  State state_ = State::kIdle;
  detail::NotifyWaiter node_;
};

/// Notifies tasks: notify_one() wakes the first waiting Notified (FIFO) or, when none waits,
/// stores one permit (at most one) that the next Notified consumes at once; notify_waiters()
/// wakes every Notified waiting now and stores no permit. Thread-safe; works under any
/// executor. Not movable; it must outlive its Notified futures.
class SPOOL_API Notify {
 public:
  /// A Notify with no stored permit and no waiter.
  Notify() = default;
  Notify(const Notify&) = delete;
  Notify& operator=(const Notify&) = delete;

  /// A future that completes at the next notification (see Notified).
  [[nodiscard]] Notified notified() noexcept;
  /// Wakes the first waiter, or stores the permit when nobody waits.
  void notify_one();
  /// Wakes every current waiter (and every Notified created before this call); stores no
  /// permit.
  void notify_waiters();

 private:
  friend class Notified;
  // state_ word: (notify_waiters calls << kShift) | one of:
  //   kEmpty       no permit, nobody waits
  //   kNotified    a permit is stored (set by notify_one, consumed by a Notified's poll)
  //   kHasWaiters  the waiter list is not empty (set and cleared only under lock_)
  // The call count is incremented under lock_ by notify_waiters.
  static constexpr std::size_t kEmpty = 0;
  static constexpr std::size_t kNotified = 1;
  static constexpr std::size_t kHasWaiters = 2;
  static constexpr std::size_t kStateMask = 3;
  static constexpr unsigned kShift = 2;

  // Consumes a stored permit lock-free (acquire CAS); false when there is none.
  bool take_permit(std::size_t cur) noexcept;
  Poll<void> enqueue(Notified& n, const Waker& waker);
  Poll<void> repoll(Notified& n, const Waker& waker);
  void cancel(Notified& n) noexcept;
  // With lock_ held: kHasWaiters -> kEmpty once the list is empty.
  void leave_waiting_locked() noexcept;

  // See above. Lock-free transitions (kEmpty <-> kNotified) are CASes: notify_one's with
  // release, paired with the acquire CAS of the poll that consumes the permit. Transitions
  // to and from kHasWaiters, and the call count, change only under lock_.
  detail::Atomic<std::size_t> state_{kEmpty};
  // Guards waiters_ and the nodes linked in it.
  detail::Mutex lock_;
  detail::WaiterList waiters_;
};

}  // namespace spool
