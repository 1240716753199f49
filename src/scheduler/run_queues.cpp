#include "scheduler/run_queues.hpp"

#include <chrono>

#include "task/harness.hpp"

namespace spool::detail {

RunQueues::RunQueues(const LevelTable& levels, std::size_t num_pollers)
    : levels_(levels),
      num_levels_(levels.num_levels()),
      has_levels_(levels.num_channels() > 1 || levels.any_earliest_deadline_first()),
      yields_on_request_(levels.num_levels() > 1 && !levels.round_robin()),
      num_pollers_(num_pollers),
      injects_(new PaddedInject[levels.num_channels()]),
      edf_(levels.any_earliest_deadline_first() ? new EdfQueue[levels.num_channels()] : nullptr),
      levels_queued_(num_levels_),
      yields_(new PaddedYield[num_pollers]),
      counters_(new std::unique_ptr<ChannelCounters[]>[num_pollers]),
      handed_off_(new ChannelCounters[levels.num_channels()]) {
  for (std::size_t p = 0; p < num_pollers; ++p) {
    counters_[p].reset(new ChannelCounters[levels.num_channels()]);
  }
}

bool RunQueues::push_inject(TaskHeader* t, std::uint16_t channel) noexcept {
  count(t, 1);
  if (inject(channel).push(t)) return true;
  count(t, -1);
  drop_task_refs(t);
  return false;
}

bool RunQueues::push_edf(TaskHeader* t) noexcept {
  count(t, 1);
  if (edf_[t->channel].push(t)) return true;
  count(t, -1);
  drop_task_refs(t);
  return false;
}

TaskHeader* RunQueues::pop_edf(std::uint16_t channel) noexcept {
  TaskHeader* t = edf_[channel].pop(std::chrono::steady_clock::now());
  if (t != nullptr) count(t, -1);
  return t;
}

void RunQueues::request_yield(std::uint16_t level) noexcept {
  if (!yields_on_request_ || level + 1 == num_levels_) return;  // nothing runs below the lowest
  ask_to_yield(
      num_pollers_, [&](std::size_t i) -> YieldState& { return yields_[i].state; }, level);
}

bool RunQueues::has_shared_work() const noexcept {
  for (std::uint16_t ch = 0; ch < levels_.num_channels(); ++ch) {
    if (!injects_[ch].queue.is_empty()) return true;
    if (is_edf(ch) && !edf_[ch].is_empty()) return true;
  }
  return false;
}

void RunQueues::close() noexcept {
  for (std::uint16_t ch = 0; ch < levels_.num_channels(); ++ch) {
    injects_[ch].queue.close();
    if (is_edf(ch)) edf_[ch].close();
  }
}

void RunQueues::drain() noexcept {
  for (std::uint16_t ch = 0; ch < levels_.num_channels(); ++ch) {
    while (TaskHeader* t = injects_[ch].queue.pop()) drop_task_refs(t);
    if (!is_edf(ch)) continue;
    while (TaskHeader* t = edf_[ch].pop(std::chrono::steady_clock::time_point::min())) {
      drop_task_refs(t);
    }
  }
}

void RunQueues::fill_metrics(RuntimeMetrics& m) const {
  const std::uint16_t n = levels_.num_channels();
  for (std::uint16_t ch = 0; ch < n; ++ch) {
    const std::size_t len = injects_[ch].queue.len();
    m.inject_queue_depth += len;
    m.channels[ch].queued += len;
    if (is_edf(ch)) {
      m.channels[ch].queued += edf_[ch].len();
      m.channels[ch].deadline_misses = edf_[ch].misses();
    }
    if (n == 1) continue;  // one channel: its polls are the pollers' (no per-channel counters)
    for (std::size_t p = 0; p < num_pollers_; ++p) add_counters(m.channels[ch], counters_[p][ch]);
    add_counters(m.channels[ch], handed_off_[ch]);
  }
}

}  // namespace spool::detail
