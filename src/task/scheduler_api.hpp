// What a task needs from whoever runs it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

namespace spool::detail {

class OwnedTasks;
class TaskHeader;
class TaskObserver;

// A scheduler runs spawned tasks. All functions are thread-safe.
class Scheduler {
 public:
  // Queues `task` to be polled. Takes over the reference of the notification (the caller
  // set NOTIFIED). `is_yield`: the task yielded, so it goes behind other runnable work.
  // Unless on one of the runtime's threads, the caller holds another reference until this
  // returns: that is what keeps the scheduler alive meanwhile (TaskHeader::scheduler_pin).
  virtual void schedule(TaskHeader* task, bool is_yield) noexcept = 0;
  // schedule(task, true) for each of `tasks`, in order: tasks that yielded, drained from a
  // thread's deferred list. A scheduler may queue them in one go.
  virtual void schedule_yielded(std::span<TaskHeader* const> tasks) noexcept {
    for (TaskHeader* t : tasks) schedule(t, true);
  }
  // Takes `task`'s queue entry back if it is still queued where it may wait a long time (a
  // blocking call behind busy pool threads); true: the caller owns the entry's reference.
  virtual bool take_queued(TaskHeader*) noexcept { return false; }

  // The owned-task list of the scheduler's runtime, which a completed task leaves. Not a
  // virtual call: every scheduler of a runtime shares its one list.
  OwnedTasks& owned() const noexcept { return owned_; }

  // The object that owns this scheduler (the runtime), which pin() keeps alive. Set once,
  // before the first task is spawned and before any thread that may call pin() starts.
  void set_owner(std::weak_ptr<void> owner) noexcept { owner_ = std::move(owner); }
  // Keeps the scheduler alive while the result is held (null once the owner is being
  // destroyed: its shutdown completes every task it can claim, and a claimer off its
  // threads holds a pin of its own, e.g. ChildSet::keep_runtime_locked).
  std::shared_ptr<void> pin() const noexcept { return owner_.lock(); }

  // The observer of this scheduler's tasks (the runtime's task hooks), or null. Set once,
  // before the first task is spawned and before any runtime thread starts; read by every
  // thread that spawns, polls or completes one of its tasks.
  void set_observer(const TaskObserver* observer) noexcept;
  const TaskObserver* observer() const noexcept { return observer_; }
  // The observer if it watches polls (poll hooks or task times), else null: a runtime with
  // only spawn and terminate hooks polls its tasks as one without hooks does.
  const TaskObserver* poll_observer() const noexcept { return poll_observer_; }

 protected:
  explicit Scheduler(OwnedTasks& owned) noexcept : owned_(owned) {}
  ~Scheduler() = default;

 private:
  OwnedTasks& owned_;
  std::weak_ptr<void> owner_;
  const TaskObserver* observer_ = nullptr;
  const TaskObserver* poll_observer_ = nullptr;
};

// The scheduler whose worker thread this is, null elsewhere (set by the multi-thread worker
// loop). Such a thread keeps its scheduler alive (the runtime joins or pins it), so a wake
// from it needs no reference of its own across schedule(). Only its own thread touches it.
inline constinit thread_local const Scheduler* this_thread_scheduler = nullptr;

}  // namespace spool::detail
