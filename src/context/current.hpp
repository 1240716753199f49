// Which runtime the calling thread is in, and whether it is one of that runtime's threads.
#pragma once

#include "context/thread_local_scope.hpp"
#include "spool/detail/current_runtime.hpp"

namespace spool::detail {

class RuntimeShared;

// current_runtime_ptr() (spool/detail/current_runtime.hpp): the runtime whose handle
// Handle::current() returns on this thread, or null.
// The runtime this thread is a worker or blocking-pool thread of, or null: a shutdown
// started on such a thread cannot wait for the threads, since it would wait for itself.
RuntimeShared* runtime_of_thread() noexcept;

// Makes `rt` the current runtime for the scope's lifetime; restores the previous one after.
class CurrentRuntimeScope : ThreadLocalScope<RuntimeShared*> {
 public:
  explicit CurrentRuntimeScope(RuntimeShared* rt) noexcept;
};

// Marks the calling thread as one of `rt`'s own threads (and `rt` as its current runtime)
// for the scope's lifetime.
class RuntimeThreadScope : ThreadLocalScope<RuntimeShared*> {
 public:
  explicit RuntimeThreadScope(RuntimeShared* rt) noexcept;

 private:
  CurrentRuntimeScope current_;
};

}  // namespace spool::detail
