// Running, waking, cancelling and freeing spawned tasks.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "context/deferred.hpp"
#include "spool/core/backtrace.hpp"
#include "spool/core/context.hpp"
#include "task/header.hpp"

namespace spool::detail {

// Builds the header of a new spawned task in the frame's prefix (state: NOTIFIED,
// JOIN_INTEREST, 3 references). The frame's prefix must not hold a header yet (the Task
// may have been polled by hand before). It is pinned by complete() if need be. The task is
// on channel 0 until the caller sets TaskHeader::channel. It records `name` and `where`,
// and owns the name if `where.line` has kNameOwnedBit.
TaskHeader* new_task(TaskPromiseBase& promise, std::coroutine_handle<> frame, Scheduler* scheduler,
                     const char* name, SpawnLocation where) noexcept;
// The same for a task pinned for life (a blocking call), without a name: it must get its
// TaskHeader::scheduler_pin from the caller before it is published.
TaskHeader* new_pinned_task(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                            Scheduler* scheduler, SpawnLocation where) noexcept;

// The spawned task being polled on this thread, or null (outside any poll, or inside a poll
// that spool::block_on makes).
const TaskHeader* current_task() noexcept;

// Polls a task taken from a run queue (consumes that entry's reference). `slot` is the
// running thread's reactor slot (may be null).
void run_task(TaskHeader* task, ReactorSlot* slot);

// Cancels a task taken off the owned-task list at shutdown (consumes the list's reference).
void shutdown_task(TaskHeader* task);

// Cancels the task on the calling thread if no thread is polling it: its frame is destroyed
// before this returns. A task being polled elsewhere is cancelled by its poller when that
// poll ends (the caller waits for that itself); a finished task is left as it is.
void join_cancel_now(TaskHeader* task) noexcept;
// Keeps `task`'s runtime alive while the result is held (null once it is being destroyed).
// Safe on one of that runtime's threads, or while a reference to a live task pins it.
std::shared_ptr<void> pin_runtime_of(const TaskHeader* task) noexcept;

// Where an idle task waits, and an upper bound of its Wakers and AbortHandles (0: a lost
// waker; unknown if a wake or cancel came during the read). docs/observability.md.
struct Inspection {
  Backtrace backtrace;
  std::optional<std::uint64_t> wakers;
  std::uint32_t wakers_made = 0;  // read with `wakers`, from the same word
};
// Reads an idle task under an inspection claim (nullopt if it is not idle), consuming a
// reference the caller took; a wake or abort meanwhile reschedules it.
std::optional<Inspection> inspect_task(TaskHeader* task);

// Drops `n` references, freeing the task after the last.
void drop_task_refs(TaskHeader* task, std::uint64_t n = 1) noexcept;

// A waker for `task` that holds one new reference.
Waker task_waker(TaskHeader* task);

// Drains a deferred-wake list (context/deferred.hpp): each spool task goes to the back of its
// run queue (never the LIFO slot); any other waker is woken. True if there was any.
bool wake_deferred(DeferredWakes& list);
// Queues a task that a wake (or an abort) made NOTIFIED while it was idle, with the wake's
// reference: stamps the wake for the task's times (TaskObserver::woken), then schedules it.
void submit_woken(TaskHeader* task, bool is_yield) noexcept;

}  // namespace spool::detail
