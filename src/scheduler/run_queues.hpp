// The run queues a scheduler's threads share and the rules of levels over them
// (docs/levels.md), for both flavours: an inject queue per channel, an EDF queue per
// earliest-deadline-first channel, a queued count per level, and each polling thread's yield
// request. A flavour adds only its threads' own queues and picks with pick_task (picker.hpp).
#pragma once

#include <cstdint>
#include <memory>

#include "scheduler/edf_queue.hpp"
#include "scheduler/inject_queue.hpp"
#include "scheduler/level_poll.hpp"
#include "scheduler/levels.hpp"
#include "scheduler/yield_request.hpp"
#include "spool/metrics.hpp"
#include "task/header.hpp"

namespace spool::detail {

class RunQueues {
 public:
  // `num_pollers`: the threads that poll tasks (workers, or the current-thread driver).
  RunQueues(const LevelTable& levels, std::size_t num_pollers);

  const LevelTable& levels() const noexcept { return levels_; }
  // More than one channel, or an EDF one: only then do channels, counts and EDF queues matter.
  bool has_levels() const noexcept { return has_levels_; }
  // More than one level: tasks are counted per level and the level is chosen at each pick.
  bool several_levels() const noexcept { return num_levels_ > 1; }
  // HighestFirst with several levels: a running task yields when a higher level has work.
  bool yields_on_request() const noexcept { return yields_on_request_; }
  std::uint16_t level_of(const TaskHeader* t) const noexcept {
    return levels_.level_of(t->channel);
  }

  InjectQueue& inject(std::uint16_t channel) noexcept { return injects_[channel].queue; }
  bool is_edf(std::uint16_t channel) const noexcept {
    return edf_ != nullptr && levels_.earliest_deadline_first(channel);
  }

  // Counts a task into (+1) or out of (-1) its level's queued number (several levels only).
  void count(const TaskHeader* t, std::int64_t delta) noexcept {
    if (num_levels_ > 1) levels_queued_.add(level_of(t), delta);
  }
  // Queues `t` in the inject queue of `channel` (its own), counted; false once closed (its
  // reference is dropped then: the task is being cancelled anyway).
  bool push_inject(TaskHeader* t, std::uint16_t channel) noexcept;
  // The same for an EDF channel's queue.
  bool push_edf(TaskHeader* t) noexcept;
  // The earliest-deadline task of EDF `channel`, counted out, or null.
  TaskHeader* pop_edf(std::uint16_t channel) noexcept;

  // Whether `level` may have a queued task (one seq_cst load; always true with one level).
  bool level_may_have_work(std::uint16_t level) const noexcept {
    return num_levels_ == 1 || levels_queued_.has_work(level);
  }
  // Whether a level above `level` has a queued task.
  bool higher_level_queued(std::uint16_t level) const noexcept {
    return levels_queued_.higher_than(level);
  }
  // Whether `t`, woken by the task running on poller `p`, may take p's LIFO slot, where no
  // other thread can take it and no channel turn applies. Only a task of a level with one
  // channel (else one channel's chain of wakes would take three turns to each sibling's
  // one), of the running task's level (a higher one goes where idle threads can take it, a
  // lower one must not jump ahead), and, under HighestFirst, of the lowest level (a higher
  // one could wait in the slot while another thread runs lower work).
  // (Inline: a call on this path costs the LIFO path without levels its register saves.)
  bool lifo_allowed(std::size_t p, const TaskHeader* t) noexcept {
    const std::uint16_t level = level_of(t);
    if (levels_.end_channel(level) - levels_.first_channel(level) != 1) return false;
    if (num_levels_ == 1) return true;
    if (level != yield(p).running_level.load(std::memory_order_relaxed)) return false;
    return !yields_on_request_ || level + 1 == num_levels_;
  }
  // HighestFirst: asks the poller running the lowest-level task below `level` to yield.
  void request_yield(std::uint16_t level) noexcept;
  YieldState& yield(std::size_t poller) noexcept { return yields_[poller].state; }

  // HighestFirst, before poller `y` polls `t`: publishes t's level, then looks again for
  // higher-level work queued since the pick (YieldState::running_level). True: poll it.
  // False: `t` went back to its EDF queue, or to `push_local(t)` counted.
  template <class PushLocal>
  bool may_poll_now(YieldState& y, TaskHeader* t, PushLocal&& push_local) noexcept {
    const std::uint16_t level = level_of(t);
    if (!yields_on_request_) {
      // RoundRobin: nobody asks; the level is read by lifo_allowed on this thread only.
      y.running_level.store(level, std::memory_order_relaxed);
      return true;
    }
    if (!higher_level_since_pick(y, levels_queued_, level)) return true;
    if (is_edf(t->channel)) {
      push_edf(t);
    } else {
      count(t, 1);
      push_local(t);
    }
    return false;
  }

  // Poll counters of `channel` on `poller`, and of polls whose poller lost its queues
  // mid-poll (block_in_place), which any thread may add to.
  ChannelCounters& counters(std::size_t poller, std::uint16_t channel) noexcept {
    return counters_[poller][channel];
  }
  ChannelCounters& handed_off(std::uint16_t channel) noexcept { return handed_off_[channel]; }

  // True if a task waits in an inject or EDF queue.
  bool has_shared_work() const noexcept;
  // Refuses every later push (the shutdown).
  void close() noexcept;
  // Drops every queued task's reference (after close).
  void drain() noexcept;
  // Adds the shared queues' depths and every poller's counters to `m`.
  void fill_metrics(RuntimeMetrics& m) const;

 private:
  struct alignas(64) PaddedInject {
    InjectQueue queue;
  };
  struct alignas(64) PaddedYield {
    YieldState state;
  };

  const LevelTable& levels_;
  const std::uint16_t num_levels_;
  const bool has_levels_;
  const bool yields_on_request_;
  const std::size_t num_pollers_;
  const std::unique_ptr<PaddedInject[]> injects_;
  const std::unique_ptr<EdfQueue[]> edf_;  // per channel if any channel is EDF, else null
  LevelCounts levels_queued_;
  const std::unique_ptr<PaddedYield[]> yields_;
  // [poller][channel]: each poller's on its own allocation (written at every poll).
  const std::unique_ptr<std::unique_ptr<ChannelCounters[]>[]> counters_;
  const std::unique_ptr<ChannelCounters[]> handed_off_;
};

}  // namespace spool::detail
