// The runtime's task hooks (Builder::on_task_spawn, on_task_terminate, on_before_task_poll,
// on_after_task_poll) as the task layer's TaskObserver.
#pragma once

#include <memory>

#include "scheduler/levels.hpp"
#include "spool/detail/runtime_config.hpp"
#include "spool/task_meta.hpp"
#include "task/observer.hpp"

namespace spool::detail {

class TaskHeader;

// Builds the TaskMeta views the hooks receive.
struct TaskMetaAccess {
  static TaskMeta make(const TaskHeader& task, const LevelTable& levels) noexcept {
    return TaskMeta(&task, &levels);
  }
};

// Calls the configured hooks with each task's TaskMeta. Immutable after construction, so
// every thread may call it at once.
class TaskHooks final : public TaskObserver {
 public:
  // The hooks of `config`, or null when it has none: its schedulers then get no observer.
  static std::unique_ptr<TaskHooks> make(const RuntimeConfig& config, const LevelTable& levels);

  void spawned(const TaskHeader& task) noexcept override;
  void terminated(const TaskHeader& task) noexcept override;
  void before_poll(const TaskHeader& task) noexcept override;
  void after_poll(const TaskHeader& task) noexcept override;

  TaskHooks(const RuntimeConfig& config, const LevelTable& levels)
      : config_(config), levels_(levels) {}

 private:
  const RuntimeConfig& config_;
  const LevelTable& levels_;
};

}  // namespace spool::detail
