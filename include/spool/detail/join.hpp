// The task operations a JoinHandle needs; the task header itself is private (src/task).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>

#include "spool/core/task.hpp"
#include "spool/core/waker.hpp"

namespace spool::detail {

class TaskHeader;

// True once the task completed; otherwise registers `waker` to be woken at completion.
bool join_poll_complete(TaskHeader* task, const Waker& waker);
// After completion: true when the task was cancelled (it has no output).
bool join_output_cancelled(const TaskHeader* task) noexcept;
// The promise that holds the output (valid until the JoinHandle lets go).
TaskPromiseBase& join_promise(TaskHeader* task) noexcept;
bool join_is_finished(const TaskHeader* task) noexcept;
void join_abort(TaskHeader* task) noexcept;
// Cancels the task on the calling thread if no thread is polling it: its frame is destroyed
// before this returns. A task being polled elsewhere is cancelled by its poller when that
// poll ends (the caller waits for that itself); a finished task is left as it is.
void join_cancel_now(TaskHeader* task) noexcept;
// Keeps `task`'s runtime alive while the result is held (null once it is being destroyed).
// Safe on one of that runtime's threads, or while a reference to a live task pins it.
std::shared_ptr<void> pin_runtime_of(const TaskHeader* task) noexcept;
// Drops the JoinHandle's interest and reference.
void join_drop(TaskHeader* task) noexcept;
// An AbortHandle's reference: keeps the header (not the frame, nor the output) alive, as a
// Waker's does; the last drop frees it.
void task_ref_inc(TaskHeader* task) noexcept;
void task_ref_drop(TaskHeader* task) noexcept;
std::uint64_t join_task_id(const TaskHeader* task) noexcept;
// JoinError's what(): "spool: task <id> was cancelled", or "spool: task <id> threw an
// exception: <what() of the innermost std::exception nested in `cause`>".
std::string join_error_message(bool cancelled, std::uint64_t id, std::exception_ptr cause);

}  // namespace spool::detail
