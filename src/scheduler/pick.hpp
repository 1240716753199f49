// The order in which a scheduler takes its next task, shared by both flavours (the priority
// levels will extend it here, once).
#pragma once

#include <cstdint>

#include "task/header.hpp"

namespace spool::detail {

// Every `global_queue_interval` ticks the shared inject queue goes first, so that tasks
// scheduled from outside cannot be starved by tasks that keep waking each other locally;
// otherwise the thread's own queues go first and the inject queue is the fallback.
//   inject_first(): one task from the inject queue, or null
//   local():        the next task of the thread's own queues, or null
//   inject():       the fallback, from the inject queue (a flavour may take a batch), or null
template <class InjectFirst, class Local, class Inject>
TaskHeader* pick_next_task(std::uint32_t tick, std::uint32_t global_queue_interval,
                           InjectFirst&& inject_first, Local&& local, Inject&& inject) {
  if (tick % global_queue_interval == 0) {
    if (TaskHeader* t = inject_first()) return t;
  }
  if (TaskHeader* t = local()) return t;
  return inject();
}

}  // namespace spool::detail
