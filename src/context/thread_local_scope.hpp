// The base of the context's scope guards: sets one of the thread's context variables for a
// scope's lifetime and restores the value it had before.
#pragma once

#include <utility>

namespace spool::detail {

template <class T>
class ThreadLocalScope {
 public:
  ThreadLocalScope(T& var, T value) noexcept : var_(var), saved_(std::exchange(var, value)) {}
  ~ThreadLocalScope() { var_ = saved_; }
  ThreadLocalScope(const ThreadLocalScope&) = delete;
  ThreadLocalScope& operator=(const ThreadLocalScope&) = delete;

 private:
  T& var_;
  T saved_;
};

}  // namespace spool::detail
