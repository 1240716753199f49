// spool::CancellationToken: a cancellation signal that tasks can check, await, or race their
// work against; child tokens are cancelled with their parent.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/notify_wait.hpp"
#include "spool/detail/waiter_list.hpp"
#include "spool/sync/notify.hpp"

namespace spool {

namespace detail {
struct CancelState;
}

/// The future of CancellationToken::cancelled(): ready once the token is cancelled. It holds
/// a share of the token's state, so it may outlive the token it came from. Cancellation
/// (destroying it) loses nothing. Movable until first polled; moving it while it waits
/// throws std::logic_error. A poll that waits spends one unit of the task's cooperative
/// budget.
class SPOOL_API WaitForCancellation {
 public:
  /// Moves a future that does not wait (the source is left empty: polling it throws
  /// std::logic_error); throws std::logic_error for one that waits, leaving both intact.
  WaitForCancellation(WaitForCancellation&& o) : state_(o.state_) {
    if (o.wait_.waiting()) detail::throw_moved_while_waiting("spool::WaitForCancellation");
    o.state_.reset();
  }
  WaitForCancellation& operator=(WaitForCancellation&&) = delete;

  /// Ready once cancelled; pending (keeping the latest waker) until then. Throws
  /// std::logic_error on a moved-from future.
  Poll<void> poll(Context& cx);

 private:
  friend class CancellationToken;
  explicit WaitForCancellation(std::shared_ptr<detail::CancelState> state) noexcept
      : state_(std::move(state)) {}
  std::shared_ptr<detail::CancelState> state_;
  detail::NotifyWait wait_;  // on the state's Notify, which only a cancel notifies
};

/// What run_until_cancelled gives: `std::optional<T>` for a future of T (nullopt: cancelled
/// first), `bool` for a future of void (false: cancelled first).
template <class T>
using CancellableOutput = std::conditional_t<std::is_void_v<T>, bool, std::optional<T>>;

/// The future of CancellationToken::run_until_cancelled(f): polls `f` until it completes or
/// the token is cancelled, whichever comes first (cancellation is checked first at each
/// poll). When the token wins, `f` is destroyed at once, before this future returns.
template <Future F>
class RunUntilCancelled {
 public:
  /// The result type (see CancellableOutput).
  using Output = CancellableOutput<future_output_t<F>>;

  /// Ready with f's value (or true), or with nullopt (or false) once cancelled.
  Poll<Output> poll(Context& cx) {
    if (fut_ && wait_.poll(cx).is_ready()) {
      fut_.reset();  // the token won: the work is destroyed now
      // From nullopt / false directly: a copied empty optional makes g++ -O1 warn
      // -Wmaybe-uninitialized about its unset payload.
      if constexpr (std::is_void_v<future_output_t<F>>) {
        return false;
      } else {
        return Poll<Output>(std::nullopt);
      }
    }
    if (!fut_) throw std::logic_error("spool::RunUntilCancelled polled after it completed");
    auto p = fut_->poll(cx);
    if (p.is_pending()) return pending;
    fut_.reset();
    if constexpr (std::is_void_v<future_output_t<F>>) {
      return true;
    } else {
      return Poll<Output>::ready(std::move(p).value());
    }
  }

 private:
  friend class CancellationToken;
  RunUntilCancelled(WaitForCancellation wait, F fut)
      : wait_(std::move(wait)), fut_(std::in_place, std::move(fut)) {}
  WaitForCancellation wait_;
  std::optional<F> fut_;
};

/// A cancellation signal, shared by its copies: cancel() through any copy cancels them all.
/// Tasks check it (is_cancelled), await it (cancelled()), or race their work against it
/// (run_until_cancelled). child_token() makes a token that is cancelled with this one (and
/// can be cancelled alone). Cancellation is final. Thread-safe; works under any executor.
/// A moved-from token throws std::logic_error when used.
class SPOOL_API CancellationToken {
 public:
  /// A new token, not cancelled, with no parent.
  CancellationToken();

  /// Cancels this token and every child token (transitively); wakes every task awaiting
  /// cancelled(). Idempotent.
  void cancel();
  /// True once this token is cancelled: by cancel() on it, or on an ancestor (by the time
  /// that cancel() returns; while it walks the tree, a descendant may still read false).
  bool is_cancelled() const;
  /// A new token that is cancelled when this one is (at once, if this one already is).
  /// Cancelling the child does not cancel this token.
  CancellationToken child_token() const;
  /// A future that completes once this token is cancelled.
  WaitForCancellation cancelled() const { return WaitForCancellation(state("cancelled")); }
  /// A future that runs `fut` until it completes or this token is cancelled (see
  /// RunUntilCancelled).
  template <Future F>
  RunUntilCancelled<std::remove_cvref_t<F>> run_until_cancelled(F&& fut) const {
    return RunUntilCancelled<std::remove_cvref_t<F>>(cancelled(), std::forward<F>(fut));
  }

 private:
  explicit CancellationToken(std::shared_ptr<detail::CancelState> state) noexcept
      : state_(std::move(state)) {}
  const std::shared_ptr<detail::CancelState>& state(const char* what) const;
  std::shared_ptr<detail::CancelState> state_;
};

}  // namespace spool
