// How a worker with nothing to run parks, and how it is woken (docs/scheduler.md).
#include "scheduler/multi_thread/multi_thread.hpp"

namespace spool::detail {

void MultiThread::transition_from_searching(Core& core) noexcept {
  if (!core.is_searching) return;
  core.is_searching = false;
  // The last searcher found work: wake another worker to look for the rest, if there is
  // a rest. Pushers that saw this worker searching skipped their wake-up; their tasks are
  // visible here (the seq_cst pairing of the park re-check), and a task pushed after this
  // worker stopped searching is the pusher's to notify for.
  if (idle_.transition_from_searching() && work_pending()) {
    notify_parked(Idle::Published::kLocalQueue);  // (the stronger read of the two)
  }
}

void MultiThread::park(Core& core) {
  if (config_.on_thread_park) {
    config_.on_thread_park();
    // The hook may have spawned or woken a task on this thread: into this core's LIFO slot
    // or queue, a worker's own push that tells nobody. Run it rather than park on it (the
    // unpark hook too, so that the two hooks stay paired).
    if (core.lifo != nullptr || has_local_work(*workers_[core.index])) {
      if (config_.on_thread_unpark) config_.on_thread_unpark();
      return;
    }
  }
  // A worker that pushers may have relied on re-checks every queue once counted parked: the
  // last searcher (pushers skipped waking anyone because it was searching) and, with levels,
  // a worker that never searched. That one skipped every level whose queued count read zero
  // (level_may_have_work), or found only EDF channels, which nobody steals from (steal_work),
  // so it never became a searcher; a task pushed after those reads found it still counted
  // unparked, and its pusher woke nobody (Idle::should_notify pairs with this re-check as
  // with the last searcher's).
  const bool never_searched = has_levels_ && !core.is_searching;
  if ((idle_.transition_to_parked(core.index, core.is_searching) || never_searched) &&
      work_pending()) {
    notify_parked(Idle::Published::kLocalQueue);
  }
  core.is_searching = false;
  WorkerShared& w = *workers_[core.index];
  // Idle: nothing to ask to yield.
  queues_.yield(core.index).running_level.store(0, std::memory_order_relaxed);
  while (!is_shutdown()) {
    w.parks.store(w.parks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    w.state.store(WorkerState::kParked, std::memory_order_relaxed);
    // In the driver if no other worker holds it (then it waits for the next timer too). The
    // tasks woken there come to this core's queue: the first push tells a worker at once,
    // the rest once they are all there (a burst of timers firing). Not with yield requests
    // (HighestFirst levels): a push that could tell nobody asks lower levels to yield.
    NotifyBatch woken_here(core, /*tell_first=*/true, /*hold=*/!queues_.yields_on_request());
    const bool drove = driver_->park_thread(w.parker, &w.state);
    const bool tell = woken_here.end();
    bool found_work = false;
    if (!idle_.is_parked(core.index)) {
      core.is_searching = true;  // a notify unparked us and counted us as searching
      found_work = true;
    } else if (core.lifo != nullptr || has_local_work(w)) {
      // Timers fired here woke tasks into our queue. A notify that took us out of the list
      // since the check above counted us as searching: then we are.
      core.is_searching = !idle_.unpark_by_id(core.index);
      found_work = true;
    }
    if (!found_work) continue;
    if (tell) notify_parked(Idle::Published::kLocalQueue);
    // Leaving the driver for work while timers wait or sockets are open: hand it over (else
    // the timers and the I/O events would wait for a maintenance tick).
    if (drove && (driver_->time().has_timers() || driver_->io().active())) hand_driver_over();
    break;
  }
  w.state.store(WorkerState::kRunning, std::memory_order_relaxed);
  if (is_shutdown()) idle_.unpark_by_id(core.index);
  if (config_.on_thread_unpark) config_.on_thread_unpark();
}

void MultiThread::hand_driver_over() noexcept {
  // Left parked (not counted as notified): it finds no work and parks again, in the driver.
  if (auto w = idle_.a_parked_worker()) workers_[*w]->parker.unpark();
}

bool MultiThread::has_local_work(const WorkerShared& w) const noexcept {
  for (std::uint16_t ch = 0; ch < num_channels_; ++ch) {
    if (!w.queues[ch].is_empty()) return true;
  }
  return false;
}

bool MultiThread::work_pending() const noexcept {
  for (const auto& w : workers_) {
    if (has_local_work(*w) || !w->forks.is_empty()) return true;
  }
  return queues_.has_shared_work();
}

bool MultiThread::busy_poll(Core& core) {
  // The poll watches every queue, not only this worker's: it is still counted unparked, and
  // usually as a searcher, so a task pushed meanwhile on another worker or into the inject
  // queue may have woken nobody (pushers skip their wake-up while someone searches, and a
  // polling worker is not in the sleeper list). A worker that could not become a searcher
  // may see another's task it cannot steal yet; it polls again until the task is gone, as
  // the searcher that will take it does. The park after a fruitless poll re-checks as usual.
  const bool found = driver_->busy_poll(
      config_.busy_poll, [&] { return core.lifo != nullptr || work_pending() || is_shutdown(); });
  // Leaving the driver for work while sockets are open (a poll needs one): hand it over, as
  // a worker leaving a park in the driver does (the others parked on their own parkers while
  // this one held it, and would not see a timer come due or a socket wake meanwhile).
  if (found) hand_driver_over();
  return found;
}

}  // namespace spool::detail
