// Marks a thread as running an executor, so that a nested event loop is refused.
#pragma once

namespace spool::detail {

// Marks the calling thread as running the executor `what` (e.g. "spool::block_on").
// Throws NestedEventLoop, naming both, if the thread already runs one.
void enter_executor(const char* what);
// Ends what enter_executor began.
void exit_executor() noexcept;

// RAII form of enter_executor / exit_executor.
class EnterGuard {
 public:
  explicit EnterGuard(const char* what) { enter_executor(what); }
  ~EnterGuard() { exit_executor(); }
  EnterGuard(const EnterGuard&) = delete;
  EnterGuard& operator=(const EnterGuard&) = delete;
};

}  // namespace spool::detail
