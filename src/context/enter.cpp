#include "context/enter.hpp"

#include <string>
#include <utility>

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

bool running_executor_is(const char* what) noexcept { return running_executor == what; }

ExecutorHandOff::ExecutorHandOff() noexcept
    : executor_(std::exchange(running_executor, nullptr)),
      outside_budget_(outside_executor_budget()) {}

ExecutorHandOff::~ExecutorHandOff() {
  running_executor = executor_;
  set_outside_executor_budget(outside_budget_);
}

ExecutorRenamed::ExecutorRenamed(const char* what) noexcept
    : previous_(std::exchange(running_executor, what)) {}

ExecutorRenamed::~ExecutorRenamed() { running_executor = previous_; }

}  // namespace spool::detail
