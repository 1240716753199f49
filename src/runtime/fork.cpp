// spool::join's rare path: the children that run as tasks of their own (stolen from a fork
// deque, or spawned from a thread without one), the first exception, and the wait of a join
// destroyed before it finished.
//
// The protocol (docs/fork.md). Everything in ForkRemote is guarded by its ChildSet's lock;
// no user code runs under it (cancelling a child may destroy its frame on the spot, so it is
// done after the unlock).
//  - A child taken from a deque is counted remote by its join, which then waits until that
//    many children were counted out (exited_ == expected_).
//  - The thread that took it spawns its task and calls started(); the task's end calls
//    exited() (after the child's frame is destroyed). Either may come first: the second
//    counts the child out. That unlock is the last touch of the join by that child: a join
//    that then sees every child out may free it.
//  - A join destroyed early cancels every started task (and marks itself cancelled, so that
//    a task starting later is cancelled at once), then blocks until every child is out.
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "runtime/shared.hpp"
#include "spool/detail/join.hpp"
#include "spool/fork.hpp"
#include "task/harness.hpp"  // join_cancel_now

namespace spool::detail {

namespace {
// The error of a stolen child whose task was cancelled before it finished (its runtime
// shut down, or the join cancelled it after another child's exception).
std::exception_ptr cancelled_error() {
  return std::make_exception_ptr(std::runtime_error(
      "spool::join: a child was cancelled before it finished (its runtime shut down, or "
      "another child threw)"));
}
}  // namespace

void fork_site_elsewhere(ForkSite& site) noexcept {
  if (ForkDeque* deque = this_thread_forks) {  // a runtime with levels
    site.deque = deque;
    site.spills = deque->spills();
    site.runtime = deque->runtime();
    site.parent = current_task();  // its channel and deadline go to a stolen child
    site.spawn_others = false;
    return;
  }
  site.deque = nullptr;
  site.spills = 0;
  RuntimeShared* rt = current_runtime_ptr();
  const bool multi_thread = rt != nullptr && rt->is_multi_thread();
  site.runtime = multi_thread ? rt : nullptr;
  // E.g. a task left without its core by block_in_place.
  site.parent = multi_thread ? current_task() : nullptr;
  site.spawn_others = multi_thread;
}

TaskHeader* spawn_fork_task(RuntimeShared& rt, TaskPromiseBase& promise,
                            std::coroutine_handle<> frame, const TaskHeader* parent) {
  return rt.spawn_from(promise, frame, parent);
}

void ForkRemote::started(RemoteRecord* record, std::optional<JoinHandle<void>> task,
                         std::exception_ptr error) noexcept {
  Waker to_wake;
  bool cancel_now = false;
  {
    std::lock_guard lock(children.lock());
    const bool spawn_failed = error != nullptr;
    if (spawn_failed) children.record_error_locked(std::move(error), to_wake);
    if (record == nullptr) {
      children.count_exit_locked(to_wake);  // no task will report its end
    } else {
      if (task && cancelled_) {
        cancel_now = true;  // cancelled after the unlock; the record need not keep it
      } else if (task) {
        children.keep_runtime_locked(JoinHandleAccess::task_of(*task));
        record->task = std::move(task);
      }
      record->next = std::exchange(records_, record);
      if (record->half_exited) {
        // The task ended first. Cancelled: unless its spawn failed, that is the child's error.
        if (record->ended_without_value && !spawn_failed) {
          children.record_error_locked(cancelled_error(), to_wake);
        }
        children.count_exit_locked(to_wake);
      } else {
        record->half_exited = true;
      }
    }
  }
  if (cancel_now) join_cancel_now(JoinHandleAccess::task_of(*task));
  std::move(to_wake).wake();
}

void ForkRemote::exited(RemoteRecord& record, std::exception_ptr error, bool produced) noexcept {
  Waker to_wake;
  {
    std::lock_guard lock(children.lock());
    const bool cancelled = !error && !produced;
    if (error) children.record_error_locked(std::move(error), to_wake);
    if (record.half_exited) {
      if (cancelled) children.record_error_locked(cancelled_error(), to_wake);
      children.count_exit_locked(to_wake);
    } else {
      // started() comes second: a failed spawn's error (the real cause) goes first.
      record.half_exited = true;
      record.ended_without_value = cancelled;
    }
  }
  std::move(to_wake).wake();
}

void ForkRemote::cancel() noexcept {
  RemoteRecord* records;
  {
    std::lock_guard lock(children.lock());
    cancelled_ = true;
    records = records_;
  }
  // Outside the lock: a cancelled task's frame may be destroyed here, and its end calls
  // exited(). A record's task and link were set before the lock's release that ordered
  // them before this read, and stay until the join goes. (A second cancel() cancels no
  // task twice: join_cancel_now leaves a finished or cancelled task as it is.)
  for (RemoteRecord* r = records; r != nullptr; r = r->next) {
    if (r->task) join_cancel_now(JoinHandleAccess::task_of(*r->task));
  }
}

void ForkRemote::free_records() noexcept {
  for (RemoteRecord* r = records_; r != nullptr;) delete std::exchange(r, r->next);
}

void ForkRemote::cancel_and_wait(std::size_t expected) noexcept {
  cancel();
  children.wait_all_exited(expected);
}

}  // namespace spool::detail
