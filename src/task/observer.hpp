// What the task layer tells a runtime that watches its tasks (the task hooks).
#pragma once

namespace spool::detail {

class TaskHeader;

// Receives a spawned task's events. Installed on a Scheduler (Scheduler::set_observer) by a
// runtime with task hooks; a Scheduler without one costs a null test per event. Each call
// happens once per event, on the thread where the event happens; none may throw.
class TaskObserver {
 public:
  // The task was built and is about to be published (the spawning thread).
  virtual void spawned(const TaskHeader& task) noexcept = 0;
  // The task completed or was cancelled, before its JoinHandle can see it.
  virtual void terminated(const TaskHeader& task) noexcept = 0;
  // Around each poll of the task, on the polling thread.
  virtual void before_poll(const TaskHeader& task) noexcept = 0;
  virtual void after_poll(const TaskHeader& task) noexcept = 0;

 protected:
  ~TaskObserver() = default;
};

}  // namespace spool::detail
