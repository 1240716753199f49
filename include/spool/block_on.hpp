// spool::block_on: run a future to completion on the calling thread.
#pragma once

#include <memory>
#include <stdexcept>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"

namespace spool {

/// Thrown when a call would start an event loop inside another one on the same thread
/// (block_on inside a future that block_on or a runtime worker is polling).
class SPOOL_API NestedEventLoop : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {

class RootWaker;

// The non-template half of block_on: marks the thread as running an executor (refusing a
// nested one), owns the parker and the reactor slot, and builds the Context.
class SPOOL_API BlockOnExecutor {
 public:
  BlockOnExecutor();
  ~BlockOnExecutor();
  BlockOnExecutor(const BlockOnExecutor&) = delete;
  BlockOnExecutor& operator=(const BlockOnExecutor&) = delete;

  Context& context() noexcept { return cx_; }
  // Blocks until the waker is woken: in the installed reactor hook if a polled future
  // installed one, otherwise on a thread parker. Returns at once if a wake came first.
  void park();

 private:
  std::shared_ptr<RootWaker> root_;
  Waker waker_;
  ReactorSlot slot_;
  Context cx_;
};

}  // namespace detail

/// Runs `fut` to completion on the calling thread and returns its output (or rethrows
/// the exception its poll threw). While the future is pending the thread parks: in the
/// reactor hook a polled future installed (see Context::install_reactor), else on a plain
/// thread parker; the waker handed to the future unparks whichever it is parked in, and a
/// wake that comes before the park is not lost. A wake that arrives during a poll causes
/// exactly one more poll. An lvalue future is polled in place and stays with the caller.
/// Throws NestedEventLoop when called on a thread that is already running block_on or a
/// runtime worker: co_await the future instead.
template <Future F>
future_output_t<std::remove_reference_t<F>> block_on(F&& fut) {
  detail::BlockOnExecutor executor;
  for (;;) {
    auto poll = fut.poll(executor.context());
    if (poll.is_ready()) return std::move(poll).value();
    executor.park();
  }
}

}  // namespace spool
