// Which runtime the calling thread is in, and whether it is one of that runtime's threads.
#pragma once

namespace spool::detail {

class RuntimeShared;

// The runtime whose handle Handle::current() returns on this thread (a worker, a blocking
// thread, or a thread inside its block_on), or null. Defined in context/current.cpp; the
// public spawn path reads it through current_runtime_ptr() (spool/runtime.hpp).
RuntimeShared* current_runtime_ptr() noexcept;
// The runtime this thread is a worker or blocking-pool thread of, or null: a shutdown
// started on such a thread cannot wait for the threads, since it would wait for itself.
RuntimeShared* runtime_of_thread() noexcept;

// Makes `rt` the current runtime for the scope's lifetime; restores the previous one after.
class CurrentRuntimeScope {
 public:
  explicit CurrentRuntimeScope(RuntimeShared* rt) noexcept;
  ~CurrentRuntimeScope();
  CurrentRuntimeScope(const CurrentRuntimeScope&) = delete;
  CurrentRuntimeScope& operator=(const CurrentRuntimeScope&) = delete;

 private:
  RuntimeShared* saved_;
};

// Marks the calling thread as one of `rt`'s own threads (and `rt` as its current runtime)
// for the scope's lifetime.
class RuntimeThreadScope {
 public:
  explicit RuntimeThreadScope(RuntimeShared* rt) noexcept;
  ~RuntimeThreadScope();
  RuntimeThreadScope(const RuntimeThreadScope&) = delete;
  RuntimeThreadScope& operator=(const RuntimeThreadScope&) = delete;

 private:
  CurrentRuntimeScope current_;
  RuntimeShared* saved_;
};

}  // namespace spool::detail
