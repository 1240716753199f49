// The task operations a JoinHandle needs; the task header itself is private (src/task).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "spool/core/backtrace.hpp"
#include "spool/core/task.hpp"
#include "spool/core/waker.hpp"

namespace spool::detail {

class TaskHeader;

// True once the task completed; otherwise registers `waker` to be woken at completion.
SPOOL_API bool join_poll_complete(TaskHeader* task, const Waker& waker);
// After completion: true when the task was cancelled (it has no output).
SPOOL_API bool join_output_cancelled(const TaskHeader* task) noexcept;
// The promise that holds the output (valid until the JoinHandle lets go).
SPOOL_API TaskPromiseBase& join_promise(TaskHeader* task) noexcept;
SPOOL_API bool join_is_finished(const TaskHeader* task) noexcept;
SPOOL_API void join_abort(TaskHeader* task) noexcept;
// Drops the JoinHandle's interest and reference.
SPOOL_API void join_drop(TaskHeader* task) noexcept;
// An AbortHandle's reference: keeps the header (not the frame, nor the output) alive, as a
// Waker's does; the last drop frees it.
SPOOL_API void task_ref_inc(TaskHeader* task) noexcept;
SPOOL_API void task_ref_drop(TaskHeader* task) noexcept;
SPOOL_API std::uint64_t join_task_id(const TaskHeader* task) noexcept;
// Where the task waits, if it is idle (JoinHandle::backtrace).
SPOOL_API std::optional<Backtrace> join_backtrace(TaskHeader* task);
// JoinError's what(): "spool: task <id> was cancelled", or "spool: task <id> threw an
// exception: <what() of the innermost std::exception nested in `cause`>".
SPOOL_API std::string join_error_message(bool cancelled, std::uint64_t id,
                                         std::exception_ptr cause);

}  // namespace spool::detail
