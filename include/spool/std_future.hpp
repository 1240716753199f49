// Bridges to std::future: a spawned task's result as a std::future, and a std::future awaited
// on the blocking pool.
#pragma once

#include <chrono>
#include <exception>
#include <future>
#include <utility>

#include "spool/core/task.hpp"
#include "spool/join_handle.hpp"
#include "spool/runtime.hpp"

namespace spool {

namespace detail {

// Awaits `handle` and hands its outcome to `promise` (to_std_future's relay task).
template <class T>
Task<void> relay_to_promise(JoinHandle<T> handle, std::promise<T> promise) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(handle);
      promise.set_value();
    } else {
      promise.set_value(co_await std::move(handle));
    }
  } catch (...) {
    promise.set_exception(std::current_exception());
  }
}

// Reads `fut` at once when it is ready, else waits for it on a blocking-pool thread of the
// current runtime; the ready future comes back to be read here, so that its exception is
// rethrown as it is, not nested in a JoinError.
template <class T>
Task<T> await_std_future(std::future<T> fut) {
  if (fut.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    // Named, not built inside the co_await: g++ 12 destroys such a lambda twice (docs/core.md).
    auto wait = [f = std::move(fut)]() mutable {
      f.wait();
      return std::move(f);
    };
    auto handle = Handle::current().spawn_blocking(std::move(wait));
    fut = co_await std::move(handle);
  }
  co_return fut.get();
}

}  // namespace detail

/// A std::future of the task behind `handle`, for synchronous code: get() gives the task's
/// value, or throws the JoinError that awaiting the handle throws (the task was cancelled, or
/// threw: its exception is nested). A relay task on `rt` (by default the current runtime)
/// awaits the handle; it is detached, so dropping the std::future does not cancel the task
/// (keep an abort_handle() for that). If `rt` shuts down before the task finishes, the relay is
/// cancelled with it and get() throws std::future_error (broken_promise). get() blocks its
/// thread: never call it on a runtime worker (co_await the JoinHandle there). Throws as
/// Handle::current() when `rt` is not given and there is no current runtime.
template <class T>
std::future<T> to_std_future(JoinHandle<T> handle, const Handle& rt = Handle::current()) {
  std::promise<T> promise;
  std::future<T> fut = promise.get_future();
  rt.spawn(detail::relay_to_promise<T>(std::move(handle), std::move(promise))).detach();
  return fut;
}

/// Awaits `fut` without blocking a worker: when it is not ready yet, a thread of the current
/// runtime's blocking pool waits for it (std::future has no way to wake a task), so each such
/// wait holds one blocking thread (Builder::max_blocking_threads bounds them; more waits
/// queue) until the std::future is ready. The task gets its value, or the exception it holds.
/// Dropping the task does not release that thread: it waits on until the std::future is
/// ready, and the runtime's shutdown waits for it (bounded by shutdown_timeout). A ready
/// std::future is read at once, with no thread. Throws std::future_error (no_state) for an
/// invalid std::future (at the call); the task throws as Handle::current() when it waits
/// outside a runtime (on a plain thread, call fut.get() instead).
template <class T>
Task<T> from_std_future(std::future<T> fut) {
  if (!fut.valid()) throw std::future_error(std::future_errc::no_state);
  return detail::await_std_future<T>(std::move(fut));
}

}  // namespace spool
