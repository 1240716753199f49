// off_thread: a blocking call run where it blocks no worker, for the leaves that need one
// (a name lookup, a read of a stdio file).
#pragma once

#include <thread>
#include <type_traits>
#include <utility>

#include "context/current.hpp"
#include "spool/core/task.hpp"
#include "spool/runtime.hpp"
#include "spool/sync/oneshot.hpp"

namespace spool::detail {

// Runs `fn()` on the current runtime's blocking pool or, outside every runtime, on a thread
// of its own; the awaiting task only waits. Dropped before it ends, the call still runs to
// its end (so whatever `fn` uses must be its own: captured by value or shared).
template <class Fn>
Task<std::invoke_result_t<Fn&>> off_thread(Fn fn) {
  if (current_runtime_ptr() != nullptr) {
    co_return co_await Handle::current().spawn_blocking(std::move(fn));
  }
  auto [tx, rx] = oneshot::channel<std::invoke_result_t<Fn&>>();
  std::thread([fn = std::move(fn), tx = std::move(tx)]() mutable { (void)tx.send(fn()); }).detach();
  co_return co_await std::move(rx);
}

}  // namespace spool::detail
