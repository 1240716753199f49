// This thread's chain of TaskLocal scopes (spool/detail/task_locals.hpp): read and written
// only through these calls, which the compiler cannot inline into a coroutine body and so
// cannot let it reuse the thread_local's address across a suspension (llvm/llvm-project#47179).
#include <utility>

#include "spool/detail/task_locals.hpp"

namespace spool::detail {

namespace {
constinit thread_local const TaskLocalNode* current_chain = nullptr;
}  // namespace

const TaskLocalNode* current_task_locals() noexcept { return current_chain; }

const TaskLocalNode* exchange_task_locals(const TaskLocalNode* chain) noexcept {
  return std::exchange(current_chain, chain);
}

}  // namespace spool::detail
