// The multi-thread scheduler's shutdown steps (docs/scheduler.md) and its metrics.
#include <mutex>
#include <thread>

#include "scheduler/multi_thread/multi_thread.hpp"

namespace spool::detail {

std::size_t MultiThread::close_and_stop(
    std::optional<std::chrono::steady_clock::time_point> deadline) {
  shutdown_.store(true, std::memory_order_release);
  queues_.close();
  for (auto& w : workers_) w->parker.unpark();
  std::size_t left_in_poll;
  {
    std::unique_lock lock(exit_mutex_);
    auto pred = [&] { return running_ == 0; };
    if (deadline) {
      exit_cv_.wait_until(lock, *deadline, pred);
    } else {
      exit_cv_.wait(lock, pred);
    }
    left_in_poll = running_;
  }
  const bool all_left = left_in_poll == 0;
  for (std::thread& t : threads_) {
    if (all_left && t.get_id() != std::this_thread::get_id()) {
      t.join();  // every worker left its loop: these threads end promptly
    } else {
      t.detach();  // stuck in a poll past the deadline: it holds a reference to us
    }
  }
  threads_.clear();
  return left_in_poll;
}

void MultiThread::drain_queues() noexcept {
  {
    std::lock_guard lock(exit_mutex_);
    drained_ = true;  // a core still held (its thread stuck in a poll) is drained by its thread
    for (auto& core : cores_) {
      if (core_left_[core->index]) drain_core(*core);
    }
  }
  queues_.drain();
}

void MultiThread::drain_core(Core& core) noexcept {
  if (TaskHeader* t = std::exchange(core.lifo, nullptr)) drop_task_refs(t);
  for (std::uint16_t ch = 0; ch < num_channels_; ++ch) {
    while (TaskHeader* t = core.queues[ch].pop()) drop_task_refs(t);
  }
}

void MultiThread::fill_metrics(RuntimeMetrics& m) {
  std::uint64_t total_polls = 0;
  for (auto& w : workers_) {
    std::size_t depth = 0;
    for (std::uint16_t ch = 0; ch < num_channels_; ++ch) {
      const std::size_t len = w->queues[ch].len();
      depth += len;
      m.channels[ch].queued += len;
    }
    const std::uint64_t polls = w->polls.load(std::memory_order_relaxed);
    total_polls += polls;
    m.workers.push_back(WorkerMetrics{polls, w->steals.load(std::memory_order_relaxed),
                                      w->parks.load(std::memory_order_relaxed), depth,
                                      w->state.load(std::memory_order_relaxed)});
  }
  queues_.fill_metrics(m);
  if (num_channels_ == 1) m.channels[0].polled = total_polls;  // no per-channel counters
}

}  // namespace spool::detail
