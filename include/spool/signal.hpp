// spool::signal: Unix signals as a stream of deliveries.
#pragma once

#include <memory>
#include <optional>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool {

namespace detail {
struct SignalListener;
}

/// Receives the deliveries of one Unix signal to the process. Made by spool::signal, which
/// installs spool's handler for that signal (once, for the rest of the process: the
/// default action — for SIGINT and SIGTERM, ending the process — no longer happens).
/// Deliveries that come while no recv waits may be coalesced: the next recv completes once
/// for all of them. Deliveries counted before the Signal was made are not seen (one still
/// in the self-pipe, not yet counted, may be). Works under any executor:
/// the process-wide driver reads the handler's self-pipe (its background thread when no
/// executor drives it).
class SPOOL_API Signal {
 public:
  /// The future of recv: ready once the signal was delivered after the previous recv
  /// completed (or after the Signal was made).
  class SPOOL_API RecvFuture {
   public:
    /// Ready once a new delivery was seen.
    Poll<void> poll(Context& cx);

   private:
    friend class Signal;
    explicit RecvFuture(detail::SignalListener& l) noexcept : listener_(&l) {}
    detail::SignalListener* listener_;
  };

  /// Waits for the next delivery: `co_await sigint.recv();`. One task at a time. Throws
  /// std::logic_error on a moved-from Signal.
  RecvFuture recv();
  /// The next delivery, as the signal's number: a Signal is a spool::Stream that never ends
  /// (`merge(signal(SIGINT), signal(SIGTERM))`, `take`, a select branch through
  /// spool::next). Throws std::logic_error on a moved-from Signal.
  Poll<std::optional<int>> poll_next(Context& cx);

  /// Moves the stream (the moved-from one must not be used).
  Signal(Signal&&) noexcept;
  /// Moves the stream.
  Signal& operator=(Signal&&) noexcept;
  /// Stops listening (the handler stays installed).
  ~Signal();

 private:
  friend Signal signal(int signum);
  explicit Signal(int signum);
  std::unique_ptr<detail::SignalListener> listener_;
};

/// A stream of the deliveries of `signum` (SIGINT, SIGTERM, SIGHUP, SIGUSR1, ...). Throws
/// std::invalid_argument for a signal that cannot be caught or that reports a fault
/// (SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE, SIGILL) or is out of range, and
/// std::system_error when the handler or its pipe cannot be set up.
SPOOL_API Signal signal(int signum);

}  // namespace spool
