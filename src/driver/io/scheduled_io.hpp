// ScheduledIo: what an I/O driver knows of one registered file descriptor — its readiness
// and the wakers of the tasks waiting for it.
#pragma once

#include <cstdint>
#include <vector>

#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::detail {

// A readiness snapshot: the bits, and the driver's tick when it was taken (clear_readiness
// clears only what no later event set again).
struct ReadyEvent {
  std::uint32_t tick = 0;
  std::uint32_t bits = 0;
};

// One registration (one per file descriptor, made by the I/O driver, freed by its holder).
// The driver sets readiness bits and wakes; a leaf future reads the bits, tries its syscall,
// and on EAGAIN clears the bit it used and waits (edge-triggered: the driver reports each
// new edge once). One task reads and one task writes at a time: each direction has one
// AtomicWaker, as a TcpStream's halves have.
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

  // The driver (its holder): adds `bits`, moves the tick on, wakes the directions they end.
  void set_readiness(std::uint32_t bits) {
    add_bits(bits);
    if ((bits & kReadMask) != 0) reader_.wake();
    if ((bits & kWriteMask) != 0) writer_.wake();
  }

  // The leaf: ready with the snapshot when any bit of `mask` (kReadMask or kWriteMask) is
  // set; else registers the task's waker for that direction and checks again (a wake
  // between the two finds the waker, or the second load sees its bits).
  Poll<ReadyEvent> poll_ready(Context& cx, std::uint32_t mask) {
    if (auto ev = ready(mask)) return Poll<ReadyEvent>::ready(*ev);
    (mask == kReadMask ? reader_ : writer_).register_waker(cx.waker());
    if (auto ev = ready(mask)) return Poll<ReadyEvent>::ready(*ev);
    return pending;
  }

  // The driver (its holder), when the kernel refused to go on watching the fd (io_uring: a
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
  // woken once the caller has released its lock.
  void shut_down(std::vector<Waker>& out) {
    add_bits(kShutdown);
    if (auto w = reader_.take()) out.push_back(std::move(*w));
    if (auto w = writer_.take()) out.push_back(std::move(*w));
  }

  // The socket is closing: drops the wakers now rather than when the holder frees the
  // registration (a waker holds its task, and through it the runtime that owns the driver:
  // kept in the release queue of a driver nobody parks in any more, it would never go).
  void drop_wakers() noexcept {
    (void)reader_.take();
    (void)writer_.take();
  }

  // Registry links, guarded by the driver's registry mutex.
  ScheduledIo* prev = nullptr;
  ScheduledIo* next = nullptr;
  // Removed, kept until the poller's last event for it (io_uring); guarded by that mutex.
  bool released = false;

 private:
  void add_bits(std::uint32_t bits) noexcept {
    std::uint64_t cur = readiness_.load(std::memory_order_relaxed);
    // AcqRel: release publishes the bits (and what the kernel made ready) to the leaf's
    // acquire load in poll_ready; the CAS loop keeps a concurrent clear from losing them.
    while (!readiness_.compare_exchange_weak(cur, pack(tick_of(cur) + 1, bits_of(cur) | bits),
                                             std::memory_order_acq_rel,
                                             std::memory_order_relaxed)) {
    }
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
  // (tick << 32) | bits. Written by the driver's holder (set_readiness: CAS, acq_rel) and by
  // the leaves (clear_readiness: CAS, relaxed, only if the tick is the one they saw); read
  // with acquire by poll_ready. Starts readable and writable (see the constructor).
  Atomic<std::uint64_t> readiness_{pack(0, kReadable | kWritable)};
  AtomicWaker reader_;
  AtomicWaker writer_;
};

}  // namespace spool::detail
