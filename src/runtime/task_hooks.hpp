// The runtime's task hooks (Builder::on_task_spawn, on_task_terminate, on_before_task_poll,
// on_after_task_poll) and task times (Builder::measure_task_times) as the task layer's
// TaskObserver, and what TaskMeta reads.
#pragma once

#include <memory>

#include "scheduler/levels.hpp"
#include "spool/detail/runtime_config.hpp"
#include "task/observer.hpp"

namespace spool::detail {

// The hooks of `config` (TaskMeta::channel() reads `levels`), or null when it has none and
// measures no task times: the runtime's schedulers then get no observer.
std::unique_ptr<TaskObserver> make_task_hooks(const RuntimeConfig& config,
                                              const LevelTable& levels);

}  // namespace spool::detail
