// The errors of spool::Task's poll and of a spawn of a Task, out of their (hot, inlined)
// checks.
#pragma once

#include <stdexcept>

#include "spool/config.hpp"

namespace spool::detail {

// Why a Task cannot be polled or spawned.
enum class TaskMisuse { kEmpty, kFinished, kAwaited };

// The errors of Task::poll, out of its (hot, inlined) checks.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_not_pollable(TaskMisuse why) {
  switch (why) {
    case TaskMisuse::kEmpty:
      throw std::logic_error("spool::Task::poll on an empty (moved-from) Task");
    case TaskMisuse::kFinished:
      throw std::logic_error(
          "spool::Task::poll on a Task that has already finished: a future must not be "
          "polled again after it returned ready (or threw)");
    case TaskMisuse::kAwaited:
      break;
  }
  throw std::logic_error("spool::Task::poll on a Task that another Task is awaiting");
}

// The errors of take_for_spawn, out of its (hot, inlined) body.
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_not_spawnable(TaskMisuse why) {
  switch (why) {
    case TaskMisuse::kEmpty:
      throw std::invalid_argument(
          "spool::spawn: the Task is empty (default-constructed or moved from), so there is "
          "nothing to run; spawn the Task that a coroutine call returned");
    case TaskMisuse::kFinished:
      throw std::invalid_argument(
          "spool::spawn: the Task has already finished (it was polled until it returned ready "
          "or threw); only an unfinished Task can be spawned");
    case TaskMisuse::kAwaited:
      break;
  }
  throw std::logic_error("spool::spawn: the Task is being awaited by another Task");
}

}  // namespace spool::detail
