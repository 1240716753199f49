// ScheduledIo: what an I/O driver knows of one registered file descriptor — its readiness
// and the wakers of the tasks waiting for it.
#pragma once

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/io_waiter.hpp"
#include "spool/detail/waiter_list.hpp"
#include "spool/detail/wake_list.hpp"

namespace spool::detail {

// A readiness snapshot: the bits, and the driver's tick when it was taken (clear_readiness
// clears only what no later event set again).
struct ReadyEvent {
  std::uint32_t tick = 0;
  std::uint32_t bits = 0;
};

// A socket operation polled again after its socket object was moved away while it waited
// (its socket lives on elsewhere): the readiness path's check (ScheduledIo::poll_ready) and
// the ring's (src/net/ring_stream.cpp) say so alike.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_socket_moved_away() {
  throw std::logic_error(
      "spool::net: a socket operation was polled again after its socket object was moved "
      "away while it waited; finish or drop the operation before moving the socket");
}

// One registration (one per file descriptor, made by the I/O driver, freed by the thread in it).
// The driver sets readiness bits and wakes; a leaf future reads the bits, tries its syscall,
// and on EAGAIN clears the bit it used and waits (edge-triggered: the driver reports each
// new edge once).
//
// The waiters of a direction (IoWaiter, one per waiting future). The first to wait owns the
// direction's AtomicWaker (`owner`, claimed by CAS, given back when its operation completes
// or is dropped): one task per direction — a stream's reader, its writer — waits lock-free.
// Any other waiter, while the owner waits, links itself in the `waiting` list under the
// direction's lock and sets the direction's kQueued bit in the readiness word, by an RMW
// that also reads the readiness. The driver's add_bits is an RMW of the same word, so one
// of the two comes first: either the waiter sees the new bits (it is ready), or the driver
// sees kQueued and wakes the whole list. A woken waiter moves to the `woken` list, and back
// to `waiting` at its next poll: every waiter with a place stays reachable from here, so a
// close can detach them all before the registration is freed. Every event wakes every
// waiter of its direction; those that lose the race for the data see EAGAIN and wait again.
class ScheduledIo {
 public:
  static constexpr std::uint32_t kReadable = 1;
  static constexpr std::uint32_t kWritable = 2;
  static constexpr std::uint32_t kReadClosed = 4;   // the peer shut down its side, or a hang-up
  static constexpr std::uint32_t kWriteClosed = 8;  // a hang-up: writes fail from now on
  static constexpr std::uint32_t kError = 16;       // the syscall will report the error
  static constexpr std::uint32_t kShutdown = 32;    // the driver shut down: nothing fires again
  static constexpr std::uint32_t kFailed = 64;      // the kernel stopped watching it: failure()
  // What ends a wait for reading / for writing.
  static constexpr std::uint32_t kReadMask = kReadable | kReadClosed | kError | kShutdown | kFailed;
  static constexpr std::uint32_t kWriteMask =
      kWritable | kWriteClosed | kError | kShutdown | kFailed;

  // Registered ready for both directions: a leaf tries its syscall before it waits for an
  // edge (a fresh socket may have data already; the EAGAIN clears the bit).
  explicit ScheduledIo(int fd) noexcept : fd_(fd) {}

  int fd() const noexcept { return fd_; }

  // The thread in the driver: adds `bits`, moves the tick on, wakes the directions they end.
  void set_readiness(std::uint32_t bits) {
    const std::uint32_t before = add_bits(bits);
    if ((bits & kReadMask) != 0) wake(reader_, before);
    if ((bits & kWriteMask) != 0) wake(writer_, before);
  }

  // The leaf whose future `w` is: ready with the snapshot when any bit of `mask` (kReadMask
  // or kWriteMask) is set; else `w` waits for that direction (as its owner, or queued) and
  // the readiness is checked again in the same step. `w` keeps its place until it leaves.
  // Throws std::logic_error when `w` still has a place on another registration: its
  // socket object was moved away (its registration lives on elsewhere) while the operation
  // waited on it. (A socket object closed by an assignment detached its waiters: no throw.)
  Poll<ReadyEvent> poll_ready(Context& cx, std::uint32_t mask, IoWaiter& w) {
    if (w.io_ != nullptr && w.io_ != this) [[unlikely]] {
      throw_socket_moved_away();
    }
    if (auto ev = ready(mask)) return Poll<ReadyEvent>::ready(*ev);
    Waiters& d = mask == kReadMask ? reader_ : writer_;
    if (w.role_ == IoWaiter::Role::kNone) {
      IoWaiter* none = nullptr;
      // Acquire: pairs with the previous owner's release in leave(), so its last
      // register_waker or take happened before this owner's first register_waker (the
      // AtomicWaker's one-registering-task rule).
      if (d.owner.compare_exchange_strong(none, &w, std::memory_order_acquire,
                                          std::memory_order_relaxed)) {
        w.role_ = IoWaiter::Role::kOwner;
        w.io_ = this;
        w.read_ = mask == kReadMask;
      }
    }
    if (w.role_ != IoWaiter::Role::kOwner) return wait_queued(cx, d, mask, w);
    d.waker.register_waker(cx.waker());
    // A wake between the first load and the registration found the waker, or this load
    // sees its bits.
    if (auto ev = ready(mask)) return Poll<ReadyEvent>::ready(*ev);
    return pending;
  }

  // `w`'s future completed or is dropped: gives up its place (the owner's AtomicWaker, or
  // its queue link). `cancel`: the future is dropped, so its task's waker goes too.
  void leave(IoWaiter& w, bool cancel) noexcept {
    Waiters& d = w.read_ ? reader_ : writer_;
    if (w.role_ == IoWaiter::Role::kOwner) {
      if (cancel) (void)d.waker.take();
      // Release: pairs with the next claim's acquire (see poll_ready).
      d.owner.store(nullptr, std::memory_order_release);
    } else {
      Waker dropped;  // declared before the guard: dropped after the unlock
      std::lock_guard lock(d.lock);
      unlink_locked(d, w);
      dropped = w.take_waker();
    }
    w.role_ = IoWaiter::Role::kNone;
    w.io_ = nullptr;
  }

  // The thread in the driver, when the kernel refused to go on watching the fd (io_uring: a
  // poll that ended with an error): every wait ends, and the leaves report `err`.
  void fail(int err) {
    failure_ = err;  // published by set_readiness's release, read after ready()'s acquire
    set_readiness(kFailed);
  }
  // The errno fail() gave; read only after a snapshot that has kFailed.
  int failure() const noexcept { return failure_; }

  // The leaf, after its syscall said EAGAIN: clears `bits` unless the driver reported an
  // edge since `ev` was taken (then the syscall is tried again).
  void clear_readiness(ReadyEvent ev, std::uint32_t bits) noexcept {
    std::uint64_t cur = readiness_.load(std::memory_order_relaxed);
    while (tick_of(cur) == ev.tick) {
      // Relaxed: a leaf clears only what it saw under this tick; add_bits's CAS sees it.
      if (readiness_.compare_exchange_weak(cur, pack(ev.tick, bits_of(cur) & ~bits),
                                           std::memory_order_relaxed)) {
        return;
      }
    }
  }

  // The driver shuts down: marks the registration so and moves its wakers into `out`, to be
  // woken once the caller has released its lock. noexcept: an allocation failure of `out`
  // ends the process (as Rust's allocator does) rather than unwind, which would drop the
  // wakers taken so far under the driver's lock and this direction's (a task freed by that
  // drop may close a socket, taking those locks again).
  void shut_down(std::vector<Waker>& out) noexcept {
    add_bits(kShutdown);
    for (Waiters* d : {&reader_, &writer_}) {
      if (auto w = d->waker.take()) out.push_back(std::move(*w));
      std::lock_guard lock(d->lock);
      while (WaiterNode* n = d->waiting.front()) {
        // Moved to `woken`: still reachable from here, for a close that detaches it.
        Waker w = move_to_woken_locked(*d, *static_cast<IoWaiter*>(n));
        out.push_back(std::move(w));
      }
      clear_queued_locked(*d);
    }
  }

  // The socket is closing: detaches every waiter, whose future may outlive the registration.
  // Their wakers go now rather than when the thread in the driver frees the registration (a
  // waker holds its task, and through it the runtime that owns the driver: kept in the release
  // queue of a driver nobody parks in any more, it would never go): into `woken`, for the
  // closer to wake once its source no longer names this registration, or dropped (null).
  // noexcept: an allocation failure of `woken` ends the process, as in shut_down.
  void detach_waiters(std::vector<Waker>* woken) noexcept {
    const auto keep = [woken](Waker w) {
      if (woken != nullptr) woken->push_back(std::move(w));
    };
    for (Waiters* d : {&reader_, &writer_}) {
      // Relaxed: a socket closes only after the last poll of every future on it (the user
      // orders that, as for any use of the socket), which orders the owner's writes to its
      // IoWaiter before the writes below.
      if (IoWaiter* owner = d->owner.exchange(nullptr, std::memory_order_relaxed)) {
        owner->role_ = IoWaiter::Role::kNone;
        owner->io_ = nullptr;
      }
      if (auto w = d->waker.take()) keep(std::move(*w));
      for (;;) {
        Waker taken;  // declared before the guard: dropped (if not kept) after the unlock
        std::lock_guard lock(d->lock);
        WaiterNode* n = d->waiting.empty() ? d->woken.front() : d->waiting.front();
        if (n == nullptr) break;
        auto* w = static_cast<IoWaiter*>(n);
        unlink_locked(*d, *w);
        taken = w->take_waker();
        w->role_ = IoWaiter::Role::kNone;
        w->io_ = nullptr;
        keep(std::move(taken));
      }
    }
  }

  // Registry links, guarded by the driver's registry mutex.
  ScheduledIo* prev = nullptr;
  ScheduledIo* next = nullptr;
  // Removed, kept until the poller's last event for it (io_uring); guarded by that mutex.
  bool released = false;
  // The poller's name for this registration's watch (io_uring: its polls' user_data, with a
  // generation; 0 until the first arm). Written by arm, read by the poller, under its lock.
  std::uint64_t watch_tag = 0;

 private:
  // In the readiness word, not readiness: a direction's `waiting` list is not empty (or was,
  // until a moment ago: cleared lazily, never while it holds a waiter). Set and cleared only
  // under that direction's lock.
  static constexpr std::uint32_t kReadQueued = 128;
  static constexpr std::uint32_t kWriteQueued = 256;

  // The waiters of one direction (see the class comment).
  struct Waiters {
    explicit Waiters(std::uint32_t bit) noexcept : queued_bit(bit) {}
    // The IoWaiter that owns `waker`, or null. Claimed by CAS from null (acquire) in
    // poll_ready; given back by its owner's store of null (release) in leave(); exchanged
    // for null (relaxed) by detach_waiters at the close.
    Atomic<IoWaiter*> owner{nullptr};
    // Registered by the owner only; taken by the driver's wake, by shut_down, by the
    // owner's leave when its future is dropped, and by detach_waiters.
    AtomicWaker waker;
    Mutex lock;
    WaiterList waiting;  // guarded by `lock`: queued waiters whose wakers no wake took yet
    WaiterList woken;    // guarded by `lock`: queued waiters woken, not polled since
    // Guarded by `lock`: moved on by each wake of the queue; a waiter queued since (its
    // IoWaiter's epoch_ is this one) waits for the next edge.
    std::uint32_t epoch = 0;
    const std::uint32_t queued_bit;  // kReadQueued or kWriteQueued
  };

  // The driver: wakes the owner, and the queue if add_bits saw it (`before`) not empty.
  void wake(Waiters& d, std::uint32_t before) {
    d.waker.wake();
    if ((before & d.queued_bit) == 0) return;
    WakeList wakes;  // declared before the lock: woken after the unlock
    std::unique_lock lock(d.lock);
    // A waiter that queues while the lock is released to wake a full batch found this
    // edge's bits cleared (its EAGAIN): it waits for the next edge, whose add_bits sees
    // kQueued (still set, its list not being empty). The loop stops at it.
    const std::uint32_t epoch = ++d.epoch;
    for (WaiterNode* n = d.waiting.front();
         n != nullptr && static_cast<IoWaiter*>(n)->epoch_ != epoch; n = d.waiting.front()) {
      wakes.push(move_to_woken_locked(d, *static_cast<IoWaiter*>(n)));
      wakes.flush_if_full(lock);
    }
    if (d.waiting.empty()) clear_queued_locked(d);
  }

  // Moves `w` from `waiting` to `woken`: its waker, to be woken after the unlock.
  Waker move_to_woken_locked(Waiters& d, IoWaiter& w) noexcept {
    d.waiting.remove(w);
    Waker taken = w.take_waker();
    d.woken.push_back(w, Waker());
    w.woken_ = true;
    return taken;
  }

  // The leaf, for a waiter that does not own the direction: queues `w` (with cx's waker),
  // then sets kQueued, reading the readiness in the same RMW.
  Poll<ReadyEvent> wait_queued(Context& cx, Waiters& d, std::uint32_t mask, IoWaiter& w) {
    Waker fresh = cx.waker();  // cloned before the lock: nothing below throws
    Waker replaced;            // declared before the guard: dropped after the unlock
    std::lock_guard lock(d.lock);
    if (w.linked() && !w.woken_) {
      // Still in `waiting` since its last poll: every edge since then saw kQueued, and its
      // wake (perhaps about to take this lock) will find `w` here. Only the waker may have
      // changed.
      WaiterList::refresh_locked(w, std::move(fresh), replaced);
      return pending;
    }
    if (w.linked()) {
      d.woken.remove(w);
      w.woken_ = false;
      replaced = w.take_waker();
    }
    d.waiting.push_back(w, std::move(fresh));
    w.role_ = IoWaiter::Role::kQueued;
    w.io_ = this;
    w.read_ = mask == kReadMask;
    w.epoch_ = d.epoch;
    // AcqRel: the RMW is ordered against add_bits's CAS on this word. If it comes after,
    // it sees (acquire) the bits that CAS published; if before, that CAS sees kQueued and
    // the driver's wake takes this lock after us and finds `w` in `waiting`.
    const std::uint64_t before = readiness_.fetch_or(d.queued_bit, std::memory_order_acq_rel);
    if ((bits_of(before) & mask) == 0) return pending;
    // Ready already: `w` leaves at once (unreachable from here, it must not keep a place).
    unlink_locked(d, w);
    replaced = w.take_waker();
    w.role_ = IoWaiter::Role::kNone;
    w.io_ = nullptr;
    return Poll<ReadyEvent>::ready(ReadyEvent{tick_of(before), bits_of(before)});
  }

  // Unlinks the queued `w` (if linked) from whichever list holds it; clears kQueued when
  // `waiting` is left empty. Under d.lock.
  void unlink_locked(Waiters& d, IoWaiter& w) noexcept {
    if (w.linked()) (w.woken_ ? d.woken : d.waiting).remove(w);
    w.woken_ = false;
    if (d.waiting.empty()) clear_queued_locked(d);
  }

  void clear_queued_locked(Waiters& d) noexcept {
    // Relaxed: under d.lock, which orders it against every set of the bit (wait_queued);
    // the RMW keeps the driver's and the leaves' concurrent changes of the other bits.
    readiness_.fetch_and(~std::uint64_t{d.queued_bit}, std::memory_order_relaxed);
  }

  // Adds `bits`; returns the bits before.
  std::uint32_t add_bits(std::uint32_t bits) noexcept {
    std::uint64_t cur = readiness_.load(std::memory_order_relaxed);
    // AcqRel: release publishes the bits (and what the kernel made ready) to the leaf's
    // acquire load in poll_ready (and to wait_queued's RMW); acquire makes a waiter queued
    // before it (kQueued seen here) visible to wake(). The CAS loop keeps a concurrent
    // clear from losing the bits.
    while (!readiness_.compare_exchange_weak(cur, pack(tick_of(cur) + 1, bits_of(cur) | bits),
                                             std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
    }
    return bits_of(cur);
  }
  static constexpr std::uint64_t pack(std::uint32_t tick, std::uint32_t bits) noexcept {
    return (std::uint64_t{tick} << 32) | bits;
  }
  static constexpr std::uint32_t tick_of(std::uint64_t v) noexcept {
    return static_cast<std::uint32_t>(v >> 32);
  }
  static constexpr std::uint32_t bits_of(std::uint64_t v) noexcept {
    return static_cast<std::uint32_t>(v);
  }
  std::optional<ReadyEvent> ready(std::uint32_t mask) const noexcept {
    // Acquire: pairs with set_readiness's release.
    const std::uint64_t cur = readiness_.load(std::memory_order_acquire);
    if ((bits_of(cur) & mask) == 0) return std::nullopt;
    return ReadyEvent{tick_of(cur), bits_of(cur)};
  }

  const int fd_;
  int failure_ = 0;  // see fail()
  // (tick << 32) | bits. Written by the thread in the driver (set_readiness: CAS, acq_rel), by
  // the thread that shuts the driver down (shut_down: the same CAS, adding kShutdown), by
  // the leaves (clear_readiness: CAS, relaxed, only if the tick is the one they saw) and,
  // for the kQueued bits only, under a direction's lock (wait_queued: fetch_or, acq_rel;
  // clear_queued_locked: fetch_and, relaxed); read with acquire by poll_ready. Starts
  // readable and writable (see the constructor).
  Atomic<std::uint64_t> readiness_{pack(0, kReadable | kWritable)};
  Waiters reader_{kReadQueued};
  Waiters writer_{kWriteQueued};
};

}  // namespace spool::detail
