// spool::asio::RuntimeExecutor: an Asio executor that runs each function as a spool task.
#pragma once

// First: it refuses -fno-exceptions builds before Boost is looked for.
#include "spool/config.hpp"

#include <type_traits>
#include <utility>

#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/is_executor.hpp>

#include "spool/core/task.hpp"
#include "spool/runtime.hpp"

namespace spool::asio {

class RuntimeExecutor;

/// An Asio execution context over a spool runtime: what RuntimeExecutor's context query
/// returns (Asio executors name one). Holds a Handle of the runtime; must outlive its executors
/// and everything posted through them.
class RuntimeContext : public boost::asio::execution_context {
 public:
  /// A context that spawns onto `handle`'s runtime.
  explicit RuntimeContext(Handle handle) : handle_(std::move(handle)) {}
  /// The executor that spawns onto this context's runtime.
  RuntimeExecutor get_executor() noexcept;
  /// The runtime's handle.
  const Handle& handle() const noexcept { return handle_; }

 private:
  Handle handle_;
};

namespace detail {

// The task each executed function runs in: the function, then its end. An exception it
// throws ends the task (JoinError, with the task detached: lost), as no io_context's run()
// is there to rethrow it.
template <class F>
Task<void> run_function(F f) {
  std::move(f)();
  co_return;
}

}  // namespace detail

/// An Asio executor whose every function runs as a new spool task on a runtime (never inline:
/// blocking.never), so that `boost::asio::post(exec, fn)`, `dispatch`, `defer` and
/// `co_spawn(exec, awaitable, token)` run on the runtime's workers, and an `asio::awaitable`
/// there can await spool futures (async_await). Convertible to `any_io_executor`. Cheap to
/// copy; equal when over the same RuntimeContext. Thread-safe. Asio's I/O objects need an
/// io_context's executor: give them `io.get_executor()`, not this one (their services run on
/// the io_context).
class RuntimeExecutor {
 public:
  /// Spawns onto `ctx`'s runtime.
  explicit RuntimeExecutor(RuntimeContext& ctx) noexcept : ctx_(&ctx) {}

  /// Runs `f()` as a new task on the runtime, detached (Asio's execution::execute).
  template <class F>
  void execute(F&& f) const {
    ctx_->handle().spawn(detail::run_function(std::decay_t<F>(std::forward<F>(f)))).detach();
  }
  /// The RuntimeContext (Asio's execution::context query).
  RuntimeContext& query(boost::asio::execution::context_t) const noexcept { return *ctx_; }
  /// Never inline (Asio's execution::blocking query).
  static constexpr boost::asio::execution::blocking_t query(
      boost::asio::execution::blocking_t) noexcept {
    return boost::asio::execution::blocking.never;
  }
  /// Already never-blocking (Asio's require of execution::blocking.never).
  RuntimeExecutor require(boost::asio::execution::blocking_t::never_t) const noexcept {
    return *this;
  }
  /// Equal when over the same context.
  friend bool operator==(const RuntimeExecutor& a, const RuntimeExecutor& b) noexcept {
    return a.ctx_ == b.ctx_;
  }
  /// Unequal when over different contexts.
  friend bool operator!=(const RuntimeExecutor& a, const RuntimeExecutor& b) noexcept {
    return a.ctx_ != b.ctx_;
  }

 private:
  RuntimeContext* ctx_;
};

inline RuntimeExecutor RuntimeContext::get_executor() noexcept { return RuntimeExecutor(*this); }

}  // namespace spool::asio
