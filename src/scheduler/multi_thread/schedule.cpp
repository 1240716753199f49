// Where a woken or spawned task is queued: an EDF queue, the waking worker's LIFO slot or
// ring, or an inject queue, and who is told (docs/scheduler.md, docs/levels.md).
#include "scheduler/multi_thread/multi_thread.hpp"
#include "scheduler/multi_thread/worker_context.hpp"

namespace spool::detail {

inline bool MultiThread::tell_of_local_push(Core& core) noexcept {
  if (core.is_searching) return true;  // a searcher finds it
  if (core.batching_notify && !std::exchange(core.tell_first, false)) {
    core.notify_after_batch = true;  // one notification for the rest of the batch
    return true;
  }
  return notify_parked(Idle::Published::kLocalQueue);
}

void MultiThread::schedule(TaskHeader* t, bool is_yield) noexcept {
  if (has_levels_) {
    schedule_with(Picker<true>(queues_), t, is_yield);
  } else {
    schedule_with(Picker<false>(queues_), t, is_yield);
  }
}

void MultiThread::schedule_yielded(std::span<TaskHeader* const> tasks) noexcept {
  Core* core = held_core(this);
  if (has_levels_ || core == nullptr) {
    // Levels: each task has its channel and is counted into its level; off this worker:
    // the inject queue.
    Scheduler::schedule_yielded(tasks);
    return;
  }
  core->queues[0].push_back_many(tasks.data(), tasks.size(), queues_.inject(0), drop_ref);
  (void)tell_of_local_push(*core);
}

template <class Picker>
void MultiThread::schedule_with(Picker picker, TaskHeader* t, bool is_yield) noexcept {
  if (picker.is_edf(t)) {
    push_edf(t);
    return;
  }
  if (Core* core = held_core(this)) {
    schedule_local(picker, *core, t, is_yield);
    return;
  }
  schedule_remote<Picker>(t);
}

template <class Picker>
void MultiThread::schedule_local(Picker picker, Core& core, TaskHeader* t, bool is_yield) noexcept {
  if (is_yield || !lifo_slot_ || !picker.lifo_allowed(core.index, t)) {
    push_local<Picker>(core, t);
    return;
  }
  // A task woken or spawned by the running one runs next here (message passing stays
  // on one core); the slot's previous occupant goes to the queue.
  if (TaskHeader* prev = std::exchange(core.lifo, t)) push_local<Picker>(core, prev);
}

template <class Picker>
void MultiThread::push_local(Core& core, TaskHeader* t) noexcept {
  Picker picker(queues_);
  const std::uint16_t channel = picker.channel_of(t);  // (t may be stolen and gone once queued)
  picker.count(t, 1);
  core.queues[channel].push_back_or_overflow(t, queues_.inject(channel), drop_ref);
  if (!tell_of_local_push(core)) picker.queued_unseen(channel);
}

template <class Picker>
void MultiThread::schedule_remote(TaskHeader* t) noexcept {
  Picker picker(queues_);
  const std::uint16_t channel = picker.channel_of(t);  // (t may be gone once queued)
  if (!queues_.push_inject(t, channel)) return;        // shut down
  if (!notify_parked(Idle::Published::kInjectQueue)) picker.queued_unseen(channel);
}

void MultiThread::push_edf(TaskHeader* t) noexcept {
  const std::uint16_t level = queues_.level_of(t);  // (t may be gone once queued)
  if (!queues_.push_edf(t)) return;
  if (!notify_parked(Idle::Published::kInjectQueue)) queues_.request_yield(level);
}

}  // namespace spool::detail
