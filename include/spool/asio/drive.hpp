// spool::asio::drive and spool::asio::run: a thread that runs an io_context for spool tasks.
#pragma once

// First: it refuses -fno-exceptions builds before Boost is looked for.
#include "spool/config.hpp"

#include <memory>
#include <type_traits>
#include <utility>

#include <boost/asio/io_context.hpp>

#include "spool/block_on.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/reactor_hook.hpp"

namespace spool::asio {

namespace detail {

// What one drive() call sets up on its thread (src/asio/drive.cpp): the reactor hook that
// parks in io.run_one(), a work guard (so that run_one waits rather than returns when the
// io_context has nothing to do), and the mark that this thread drives `io`. All of it ends
// with the drive() call: nothing stays installed after it returns.
class SPOOL_API DriveScope {
 public:
  explicit DriveScope(boost::asio::io_context& io);
  ~DriveScope();
  DriveScope(const DriveScope&) = delete;
  DriveScope& operator=(const DriveScope&) = delete;

  const std::shared_ptr<ReactorHook>& hook() const noexcept { return hook_; }

 private:
  std::shared_ptr<ReactorHook> hook_;
  void* registry_;  // the io_context's registry of use_task operations (OpRegistry)
  // The context this thread drove before, and its registry (restored at the end: a nested
  // drive is refused by block_on, after this scope began).
  void* previous_;
  void* previous_registry_;
};

// Installs the drive hook in the context of every poll, then polls the future.
template <class F>
struct Driven {
  F& fut;
  const std::shared_ptr<ReactorHook>& hook;
  auto poll(Context& cx) {
    cx.install_reactor_or_throw(hook);
    return fut.poll(cx);
  }
};

}  // namespace detail

/// Runs `fut` to completion on the calling thread, which also runs `io`: while the future
/// waits, the thread parks in `io.run_one()`, so Asio's handlers (use_task's completions
/// among them) run here, between the future's polls, with no other thread and no cross-thread
/// wake-up: for tasks that use Asio I/O objects, the faster way (docs/asio.md). Works as
/// spool::block_on does (no runtime is current; spool timers and sockets polled here run on
/// their background driver) and throws NestedEventLoop where it does. Nothing else may run
/// `io` meanwhile. An exception a handler throws propagates from drive (as from io.run()),
/// and drive may be called again. If `io` is stopped meanwhile, every use_task operation
/// waiting on it fails with IoContextStopped, and drive goes on (without running `io`) until
/// the future is ready. Nothing of drive stays installed when it returns.
template <Future F>
future_output_t<std::remove_reference_t<F>> drive(boost::asio::io_context& io, F&& fut) {
  detail::DriveScope scope(io);
  return spool::block_on(detail::Driven<std::remove_reference_t<F>>{fut, scope.hook()});
}

/// io.run() on the calling thread, for a thread that runs an io_context beside spool tasks;
/// when run() returns because `io` was stopped, every use_task operation still waiting on it
/// fails with IoContextStopped (a plain io.run() cannot tell them). Returns run()'s count.
SPOOL_API std::size_t run(boost::asio::io_context& io);

}  // namespace spool::asio
