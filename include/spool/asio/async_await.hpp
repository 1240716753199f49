// spool::asio::async_await: a spool future as an Asio asynchronous operation, so that an
// asio::awaitable (or any Asio completion token) can wait for it.
#pragma once

// First: it refuses -fno-exceptions builds before Boost is looked for.
#include "spool/config.hpp"

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

#include "spool/asio/errors.hpp"
#include "spool/core/future.hpp"
#include "spool/core/task.hpp"
#include "spool/runtime.hpp"
#include "spool/sync/cancellation_token.hpp"

namespace spool::asio {

namespace detail {

// The completion signature of async_await for a future of T.
template <class T>
struct AwaitSignature {
  using type = void(std::exception_ptr, T);
};
template <>
struct AwaitSignature<void> {
  using type = void(std::exception_ptr);
};

// Cancels the relay's token when Asio emits the handler's cancellation slot (on the
// handler's executor). Any cancellation type ends the wait.
struct AwaitCanceller {
  CancellationToken token;
  void operator()(boost::asio::cancellation_type_t) { token.cancel(); }
};

// Owns async_await's handler until it is completed, exactly once: by complete() with the
// future's outcome, or, when the relay task is destroyed before that (its runtime shut down
// meanwhile, or was already gone, and dropped the task, unpolled or mid-way), by the
// destructor with OperationAbandoned. Either way on the handler's associated executor, after
// the handler's cancellation slot is cleared there (Asio's slots are not thread-safe, and
// that executor is where its emits come from); a work guard keeps that executor's context
// from running out of work meanwhile. Owned by one task frame: no synchronisation.
template <class T, class Handler>
class AwaitCompletion {
  using Executor = boost::asio::associated_executor_t<Handler>;

 public:
  // The handler's second argument (T; a bool, unused, for a void future).
  using Value = std::conditional_t<std::is_void_v<T>, bool, T>;

  explicit AwaitCompletion(Handler handler)
      : work_(boost::asio::get_associated_executor(handler)), handler_(std::move(handler)) {}
  // Moves the duty too: a moved-from completion completes nothing.
  AwaitCompletion(AwaitCompletion&& other)
      : work_(std::move(other.work_)), handler_(std::move(other.handler_)) {
    other.handler_.reset();
  }
  AwaitCompletion& operator=(AwaitCompletion&&) = delete;
  ~AwaitCompletion() {
    if (!handler_) return;
    try {
      // Posted, never inline: this may run inside the initiation (a runtime already gone),
      // where Asio forbids calling the handler.
      finish(std::make_exception_ptr(OperationAbandoned(
                 "spool::asio::async_await: the spool runtime shut down (or was already shut "
                 "down) before the future completed; the future was dropped")),
             std::nullopt, false);
    } catch (...) {
      // Out of memory: the handler is destroyed uncalled, as Asio does with the handlers of
      // an execution context that cannot run them.
    }
  }

  // Hands the outcome to the handler (through dispatch: inline if this thread runs the
  // handler's executor). `value` is empty when `error` is set.
  void complete(std::exception_ptr error, std::optional<Value> value) {
    finish(std::move(error), std::move(value), true);
  }

 private:
  void finish(std::exception_ptr error, std::optional<Value> value, bool may_run_inline) {
    Executor executor = work_.get_executor();
    auto call = [handler = std::move(*handler_), error = std::move(error),
                 value = std::move(value)]() mutable {
      auto slot = boost::asio::get_associated_cancellation_slot(handler);
      if (slot.is_connected()) slot.clear();
      if constexpr (std::is_void_v<T>) {
        std::move(handler)(error);
      } else {
        std::move(handler)(error, value ? std::move(*value) : T{});
      }
    };
    handler_.reset();  // moved into `call`: completed, whatever follows
    if (may_run_inline) {
      boost::asio::dispatch(executor, std::move(call));
    } else {
      boost::asio::post(executor, std::move(call));
    }
    work_.reset();
  }

  boost::asio::executor_work_guard<Executor> work_;
  std::optional<Handler> handler_;
};

// The task that awaits `fut` on the runtime and then hands the outcome to `completion`.
template <class F, class Completion>
Task<void> await_then_complete(F fut, Completion completion, CancellationToken token) {
  using T = future_output_t<F>;
  std::exception_ptr error;
  std::optional<typename Completion::Value> value;
  try {
    auto run = token.run_until_cancelled(std::move(fut));
    auto out = co_await std::move(run);
    if constexpr (std::is_void_v<T>) {
      if (out) value.emplace(true);
    } else {
      if (out) value.emplace(std::move(*out));
    }
    if (!value) {
      error = std::make_exception_ptr(
          boost::system::system_error(boost::asio::error::operation_aborted));
    }
  } catch (...) {
    error = std::current_exception();
  }
  completion.complete(std::move(error), std::move(value));
}

// async_await's initiation: spawns the relay task on `handle`'s runtime.
struct InitiateAwait {
  Handle handle;
  template <class Handler, class F>
  void operator()(Handler&& handler, F fut) const {
    CancellationToken token;
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) slot.template emplace<AwaitCanceller>(AwaitCanceller{token});
    // A runtime that is shut down cancels the task at once: its frame, and the completion in
    // it, are destroyed unpolled, which completes the handler with OperationAbandoned.
    try {
      handle
          .spawn(await_then_complete(
              std::move(fut),
              AwaitCompletion<future_output_t<F>, std::decay_t<Handler>>(std::move(handler)),
              std::move(token)))
          .detach();
    } catch (...) {
      // The frame could not be made or spawned (out of memory): the completion was destroyed
      // with it, and has completed the handler (OperationAbandoned). Throwing as well would
      // report the operation's end twice.
    }
  }
};

}  // namespace detail

/// Awaits the spool future `fut` from Asio: an asynchronous operation with signature
/// `void(std::exception_ptr, T)` (`void(std::exception_ptr)` for a void future), for any
/// completion token — `co_await async_await(handle, fut, asio::use_awaitable)` in an
/// asio::awaitable gives T or rethrows the future's exception. The future runs as a spool
/// task on `handle`'s runtime; the handler is then called on its associated executor (a work
/// guard keeps that executor's context running meanwhile). An Asio cancellation of the
/// operation (its handler's cancellation slot, any type) drops the future, on the runtime, and
/// completes with boost::system::system_error(operation_aborted). T must be default
/// constructible (the signature's value when there is an error).
template <Future F, class Token>
auto async_await(const Handle& handle, F fut, Token&& token) {
  using T = future_output_t<F>;
  return boost::asio::async_initiate<Token, typename detail::AwaitSignature<T>::type>(
      detail::InitiateAwait{handle}, token, std::move(fut));
}

}  // namespace spool::asio
