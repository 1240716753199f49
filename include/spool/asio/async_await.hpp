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
#include <boost/system/system_error.hpp>

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

// The task that awaits `fut` on the runtime and then hands the outcome to `handler` on the
// handler's executor. The slot is cleared there, just before the call: Asio's slots are not
// thread-safe, and the handler's executor is where its emits come from.
template <class F, class Handler>
Task<void> await_then_complete(F fut, Handler handler, CancellationToken token) {
  using T = future_output_t<F>;
  auto executor = boost::asio::get_associated_executor(handler);
  auto work = boost::asio::make_work_guard(executor);  // the handler's context waits for it
  std::exception_ptr error;
  std::optional<std::conditional_t<std::is_void_v<T>, bool, T>> value;
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
  auto complete = [handler = std::move(handler), error = std::move(error),
                   value = std::move(value)]() mutable {
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) slot.clear();
    if constexpr (std::is_void_v<T>) {
      std::move(handler)(error);
    } else {
      std::move(handler)(error, value ? std::move(*value) : T{});
    }
  };
  boost::asio::dispatch(executor, std::move(complete));
  work.reset();
}

// async_await's initiation: spawns the relay task on `handle`'s runtime.
struct InitiateAwait {
  Handle handle;
  template <class Handler, class F>
  void operator()(Handler&& handler, F fut) const {
    CancellationToken token;
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    if (slot.is_connected()) slot.template emplace<AwaitCanceller>(AwaitCanceller{token});
    handle
        .spawn(await_then_complete(std::move(fut), std::decay_t<Handler>(std::move(handler)),
                                   std::move(token)))
        .detach();
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
