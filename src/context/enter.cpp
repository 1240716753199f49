#include "context/enter.hpp"

#include <string>

#include "context/budget.hpp"
#include "spool/block_on.hpp"

namespace spool::detail {

namespace {
// What the executor running on this thread is ("spool::block_on", "a spool runtime
// worker"), or null. Thread-local: no synchronisation.
thread_local const char* running_executor = nullptr;
}  // namespace

void enter_executor(const char* what) {
  if (running_executor != nullptr) {
    throw NestedEventLoop(std::string("spool: ") + what +
                          " was called on a thread that is already running " + running_executor +
                          "; nested event loops are not allowed, because the outer loop would "
                          "be blocked until the inner one finishes. co_await the future "
                          "instead (or spawn it and co_await its JoinHandle)");
  }
  running_executor = what;
  enter_executor_budget();
}

void exit_executor() noexcept {
  exit_executor_budget();
  running_executor = nullptr;
}

}  // namespace spool::detail
