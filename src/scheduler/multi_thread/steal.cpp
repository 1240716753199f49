// Where a worker with nothing of its own finds work: the inject queues, other workers' rings
// and fork deques (docs/scheduler.md).
#include <algorithm>

#include "scheduler/multi_thread/multi_thread.hpp"
#include "scheduler/multi_thread/worker_context.hpp"
#include "spool/detail/fork_deque.hpp"
#include "task/harness.hpp"

namespace spool::detail {

namespace {

std::uint64_t next_random(std::uint64_t& s) noexcept {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

}  // namespace

// Takes a share of the inject queue: one task to run now and a batch for the local queue.
TaskHeader* MultiThread::next_from_inject(Core& core, std::uint16_t channel) {
  InjectQueue& inject = queues_.inject(channel);
  if (inject.is_empty()) return nullptr;
  // Up to half the ring, as tokio (the other half takes what the batch spawns). Yielded
  // tasks rejoin at a maintenance tick behind the rest of the batch, so on a worker busy
  // with them the batch sets how many outside tasks run per round of theirs.
  constexpr std::size_t kMaxBatch = LocalQueue<>::kCapacity / 2;
  std::size_t share = std::min(kMaxBatch, inject.len() / num_workers_ + 1);
  TaskHeader* batch[kMaxBatch];
  std::size_t n = inject.pop_n(batch, share);
  if (n == 0) return nullptr;
  LocalQueue<>& q = core.queues[channel];
  for (std::size_t i = 1; i < n; ++i) q.push_back_or_overflow(batch[i], inject, drop_ref);
  // The rest of the batch left the inject queue for this worker's: a worker that searched
  // or re-checked meanwhile saw it in neither, and may have parked. A searching worker
  // tells one when it stops searching (transition_from_searching); any other must tell one
  // now, or the batch waits for this worker, which may stay in its task for good. The
  // notification's seq_cst RMW on the idle word comes after the pushes: ordered against a
  // parking worker's RMW, either it wakes that worker or that worker's re-check sees them.
  if (n > 1 && !core.is_searching) notify_parked(Idle::Published::kLocalQueue);
  return batch[0];
}

TaskHeader* MultiThread::steal_work(Core& core, std::uint16_t channel) {
  if (!core.is_searching) {
    if (idle_.transition_to_searching()) {
      core.is_searching = true;
    } else if (!queues_.several_levels()) {
      return nullptr;  // enough workers search already
    }
    // With levels a worker steals even when enough others search: it must not run a lower
    // level while a higher one waits in another worker's ring (it steals without counting as
    // a searcher, so the idle protocol is unchanged).
  }
  LocalQueue<>& mine = core.queues[channel];
  std::uint32_t start = static_cast<std::uint32_t>(next_random(core.rng) % num_workers_);
  for (std::uint32_t i = 0; i < num_workers_; ++i) {
    std::uint32_t victim = (start + i) % num_workers_;
    if (victim == core.index) continue;
    if (TaskHeader* t = workers_[victim]->queues[channel].steal_into(mine)) {
      WorkerShared& w = *workers_[core.index];
      w.steals.store(w.steals.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return t;
    }
  }
  return next_from_inject(core, channel);
}

bool MultiThread::steal_fork(Core& core) {
  std::uint32_t start = static_cast<std::uint32_t>(next_random(core.rng) % num_workers_);
  for (std::uint32_t i = 0; i < num_workers_; ++i) {
    std::uint32_t victim = (start + i) % num_workers_;
    if (victim == core.index) continue;
    if (ForkItem* item = workers_[victim]->forks.steal()) {
      WorkerShared& w = *workers_[core.index];
      w.steals.store(w.steals.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      item->run_remote();
      return true;
    }
  }
  return false;
}

void MultiThread::spill_forks(Core& core) noexcept {
  ForkDeque& forks = workers_[core.index]->forks;
  while (ForkItem* item = forks.pop()) item->run_remote();
  forks.count_spill();  // the joins on this thread's stack count their queued children remote
}

void notify_fork_thieves() noexcept { current_worker->scheduler->fork_pushed_into_empty(); }

}  // namespace spool::detail
