// Which runtime the calling thread is in, and whether it is one of that runtime's threads.
#pragma once

#include "context/thread_local_scope.hpp"
#include "spool/config.hpp"

namespace spool::detail {

class RuntimeShared;

// The runtime whose handle Handle::current() returns on this thread (a worker, a blocking
// thread, or a thread inside its block_on), or null. Defined in context/current.cpp; the
// public spawn path reads it through current_runtime_ptr() (spool/runtime.hpp, which
// exports it too: SPOOL_API here, since current.cpp does not see that declaration).
SPOOL_API RuntimeShared* current_runtime_ptr() noexcept;
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
