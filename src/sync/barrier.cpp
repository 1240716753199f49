#include "spool/sync/barrier.hpp"

#include <mutex>
#include <stdexcept>

namespace spool {

Poll<BarrierWaitResult> BarrierWait::poll(Context& cx) {
  if (barrier_ == nullptr) {
    throw std::logic_error("spool::BarrierWait polled after it was moved from");
  }
  if (done_) throw std::logic_error("spool::BarrierWait polled after it completed");
  if (!released_) {  // the first poll: arrive
    Barrier& b = *barrier_;
    std::lock_guard guard(b.lock_);
    if (++b.arrived_ < b.n_) {
      // Made under the lock: the notify_waiters of this generation's last arrival comes
      // after it, and completes it.
      released_.emplace(b.released_.notified());
    } else {
      // The last arrival. The release happens under the lock too, so that a task of the
      // next generation (which arrives under the lock) makes its Notified after it and is
      // not released by it. (Waking only schedules: nothing runs under the lock.)
      b.arrived_ = 0;
      b.released_.notify_waiters();
      done_ = true;
      return BarrierWaitResult(true);
    }
  }
  // Only a completed generation notifies: ready means released.
  if (released_->poll(cx).is_pending()) return pending;
  done_ = true;
  return BarrierWaitResult(false);
}

}  // namespace spool
