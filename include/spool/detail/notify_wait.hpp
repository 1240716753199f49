// NotifyWait: waits on a Notify until a condition holds (watch's changed() and closed()).
#pragma once

#include <optional>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/sync/notify.hpp"

namespace spool::detail {

/// The waiting part of a future whose condition its primitive makes true, then announces with
/// Notify::notify_waiters. Each wait makes a Notified *before* it looks at the condition a
/// second time: a notify_waiters after that completes the Notified (it was made before the
/// call), and one before it is seen by the look — so no announcement is missed, and no lock
/// is taken while the condition already holds. A Notified that completes with the condition
/// still false (another change came and went) is replaced, and the wait goes on. It waits in
/// the Notify's queue (the shared WaiterList), so it must not move while waiting(); the
/// future that embeds it checks that in its move constructor. Not thread-safe (one owner).
class NotifyWait {
 public:
  NotifyWait() = default;
  NotifyWait(const NotifyWait&) = delete;
  NotifyWait& operator=(const NotifyWait&) = delete;

  /// True while a Notified is queued (the last poll was pending).
  bool waiting() const noexcept { return notified_.has_value(); }

  /// Ready once `done()` is true; pending (keeping cx's waker) until `notify` is notified.
  template <class Done>
  Poll<void> poll(Context& cx, Notify& notify, Done&& done) {
    for (;;) {
      if (done()) {
        notified_.reset();
        return Poll<void>::ready();
      }
      if (!notified_) {
        notified_.emplace(notify.notified());
        continue;  // the second look, now that the Notified exists
      }
      if (notified_->poll(cx).is_pending()) return pending;
      notified_.reset();
    }
  }

 private:
  std::optional<Notified> notified_;  // made after a look that found the condition false
};

}  // namespace spool::detail
