// The runtime's task hooks as the task layer calls them.
#pragma once

#include <functional>
#include <utility>

#include "spool/task_meta.hpp"
#include "task/header.hpp"

namespace spool::detail {

// Builds the TaskMeta views the hooks receive: the task, and an opaque pointer that
// TaskMeta::channel() reads (the runtime's level table).
struct TaskMetaAccess {
  static TaskMeta make(const TaskHeader& task, const void* channels) noexcept {
    return TaskMeta(&task, channels);
  }
};

// A spawned task's events, told to the hooks that are set. Installed on a Scheduler
// (Scheduler::set_observer) by a runtime with task hooks or task times. Without one, a
// Scheduler costs a null test per spawn, poll, wake and completion; one without poll hooks
// or task times adds nothing per poll or wake (Scheduler::poll_observer). Immutable: every
// thread may call it at once. Each call happens once per event, on the thread where the
// event happens; a hook that throws ends the program (the calls are noexcept).
class TaskObserver {
 public:
  using Hook = std::function<void(const TaskMeta&)>;

  // `timed`: the runtime measures task times; every task it spawns then has a TaskSide with
  // time counters (the spawn makes them).
  TaskObserver(Hook on_spawn, Hook on_terminate, Hook before_poll, Hook after_poll,
               const void* channels, bool timed)
      : on_spawn_(std::move(on_spawn)),
        on_terminate_(std::move(on_terminate)),
        before_poll_(std::move(before_poll)),
        after_poll_(std::move(after_poll)),
        channels_(channels),
        timed_(timed) {
    if (timed_) TaskClock::calibrate();
  }

  bool timed() const noexcept { return timed_; }
  // Whether polls have anything to tell: a poll hook, or task times.
  bool observes_polls() const noexcept {
    return static_cast<bool>(before_poll_) || static_cast<bool>(after_poll_) || timed_;
  }
  // The view of `task` that every hook of one event receives.
  TaskMeta meta(const TaskHeader& task) const noexcept {
    return TaskMetaAccess::make(task, channels_);
  }
  // The task was built and is about to be published (the spawning thread).
  void spawned(const TaskHeader& task) const noexcept { call(on_spawn_, meta(task)); }
  // The task completed or was cancelled, before its JoinHandle can see it.
  void terminated(const TaskHeader& task) const noexcept { call(on_terminate_, meta(task)); }
  // Around each poll of the task, on the polling thread (the hooks' time is not the poll's).
  // Inlined into run_task, times out of line: an empty hook costs its call and little more.
  void before_poll(const TaskHeader& task, const TaskMeta& meta) const noexcept {
    call(before_poll_, meta);
    if (timed_) [[unlikely]]
      poll_started(task);
  }
  void after_poll(const TaskHeader& task, const TaskMeta& meta) const noexcept {
    if (timed_) [[unlikely]]
      poll_ended(task);
    call(after_poll_, meta);
  }
  // A wake queues the idle task (the waking thread, before Scheduler::schedule).
  void woken(const TaskHeader& task) const noexcept {
    if (timed_) task.side->times->woken(TaskClock::now());
  }

 private:
  static void call(const Hook& hook, const TaskMeta& meta) noexcept {
    if (hook) hook(meta);
  }
  [[gnu::noinline]] static void poll_started(const TaskHeader& task) noexcept {
    task.side->times->poll_started(TaskClock::now());
  }
  [[gnu::noinline]] static void poll_ended(const TaskHeader& task) noexcept {
    task.side->times->poll_ended(TaskClock::now());
  }

  const Hook on_spawn_, on_terminate_, before_poll_, after_poll_;
  const void* const channels_;
  const bool timed_;
};

}  // namespace spool::detail
