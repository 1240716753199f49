// spool::Barrier: n tasks wait until all n have arrived, then all go on; reusable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/sync/notify.hpp"

namespace spool {

class Barrier;

/// What Barrier::wait gives each task of a generation: exactly one of them is the leader.
class BarrierWaitResult {
 public:
  /// True for the one task whose arrival completed the generation.
  bool is_leader() const noexcept { return leader_; }

 private:
  friend class BarrierWait;
  explicit BarrierWaitResult(bool leader) noexcept : leader_(leader) {}
  bool leader_;
};

/// The future of Barrier::wait: it arrives at its first poll, and is ready once the
/// generation it arrived in is complete. Cancellation: destroying it after it arrived does
/// not take the arrival back (the generation still completes when the others arrive); before
/// its first poll it never arrived. Movable until first polled; moving it while it waits
/// throws std::logic_error. It must not outlive its Barrier.
class SPOOL_API BarrierWait {
 public:
  /// Moves a future that does not wait (the source is left empty: polling it throws
  /// std::logic_error, so it cannot arrive twice); throws std::logic_error for one that
  /// waits, leaving both intact.
  BarrierWait(BarrierWait&& o)
      : barrier_(o.barrier_), released_(std::move(o.released_)), done_(o.done_) {
    o.barrier_ = nullptr;
  }
  BarrierWait& operator=(BarrierWait&&) = delete;

  /// Arrives (first poll), then ready once all the generation's tasks have arrived. Throws
  /// std::logic_error on a moved-from or completed future.
  Poll<BarrierWaitResult> poll(Context& cx);

 private:
  friend class Barrier;
  explicit BarrierWait(Barrier* barrier) noexcept : barrier_(barrier) {}
  Barrier* barrier_;
  std::optional<Notified> released_;  // made on arrival, by a task that is not the last
  bool done_ = false;
};

/// A reusable barrier for `n` tasks: each generation completes when `n` wait() futures have
/// arrived; then they are all ready, one of them as the leader, and the next generation
/// starts. Thread-safe; works under any executor. Not movable; it must outlive its futures.
class Barrier {
 public:
  /// A barrier for `n` tasks (0 acts as 1: every wait completes at once, as the leader).
  explicit Barrier(std::size_t n) noexcept : n_(n == 0 ? 1 : n) {}
  Barrier(const Barrier&) = delete;
  Barrier& operator=(const Barrier&) = delete;

  /// A future that arrives at the barrier and waits for its generation (see BarrierWait).
  BarrierWait wait() noexcept { return BarrierWait(this); }

 private:
  friend class BarrierWait;
  const std::size_t n_;
  // Guards arrived_ (the arrivals of the current generation).
  detail::Mutex lock_;
  std::size_t arrived_ = 0;
  // Woken (notify_waiters) once per completed generation, by its last arrival, under lock_.
  Notify released_;
};

}  // namespace spool
