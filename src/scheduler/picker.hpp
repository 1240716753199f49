// How a scheduler's polling threads take, poll and queue tasks under the runtime's levels
// (docs/levels.md), for both flavours: the picking order (which level, which channel of the
// level, which queue of the channel) and Picker, the one place a worker asks about levels.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "scheduler/levels.hpp"
#include "scheduler/run_queues.hpp"
#include "spool/levels.hpp"
#include "task/harness.hpp"
#include "task/header.hpp"

namespace spool::detail {

// Every `global_queue_interval` ticks the shared inject queue goes first, so that tasks
// scheduled from outside cannot be starved by tasks that keep waking each other locally;
// otherwise the thread's own queues go first and the inject queue is the fallback.
//   inject_first(): one task from the inject queue, or null
//   local():        the next task of the thread's own queues, or null
//   inject():       the fallback, from the inject queue (a flavour may take a batch), or null
template <class InjectFirst, class Local, class Inject>
[[gnu::always_inline]] inline TaskHeader* pick_next_task(std::uint32_t tick,
                                                         std::uint32_t global_queue_interval,
                                                         InjectFirst&& inject_first, Local&& local,
                                                         Inject&& inject) {
  if (tick % global_queue_interval == 0) {
    if (TaskHeader* t = inject_first()) return t;
  }
  if (TaskHeader* t = local()) return t;
  return inject();
}

// Where one picking thread (a worker's core, a current-thread driver) stands in the levels.
struct LevelCursor {
  explicit LevelCursor(const LevelTable& levels) : next_channel(levels.num_levels()) {
    for (std::uint16_t l = 0; l < levels.num_levels(); ++l)
      next_channel[l] = levels.first_channel(l);
  }
  // Per level: the channel its round-robin between channels tries first next time.
  std::vector<std::uint16_t> next_channel;
  // RoundRobin between levels: the level whose slice runs, and when the slice ends.
  std::uint16_t slice_level = 0;
  std::chrono::steady_clock::time_point slice_end{};
};

// Tries the levels in their order until `try_level(level)` gives a task: HighestFirst from
// the highest down; RoundRobin from the level whose slice runs (a new slice starts when the
// last ended; a level found with nothing to run gives its turn to the next at once).
// `may_have_work(level)` is a cheap filter: false means the level has nothing runnable.
template <class MayHaveWork, class TryLevel>
TaskHeader* pick_by_level(const LevelTable& levels, LevelCursor& cursor,
                          MayHaveWork&& may_have_work, TryLevel&& try_level) {
  const std::uint16_t n = levels.num_levels();
  if (n == 1) return try_level(0);  // nothing to choose (nor any slice to keep)
  std::uint16_t first = 0;
  if (levels.round_robin()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= cursor.slice_end) {
      if (++cursor.slice_level == n) cursor.slice_level = 0;
      cursor.slice_end = now + levels.slice(cursor.slice_level);
    }
    first = cursor.slice_level;
  }
  std::uint16_t level = first;
  for (std::uint16_t i = 0; i < n; ++i) {
    if (may_have_work(level)) {
      if (TaskHeader* t = try_level(level)) {
        if (level != first && levels.round_robin()) {  // the slice's level gave its turn away
          cursor.slice_level = level;
          cursor.slice_end = std::chrono::steady_clock::now() + levels.slice(level);
        }
        return t;
      }
    }
    if (++level == n) level = 0;
  }
  return nullptr;
}

// Tries the channels of `level` round-robin, from where the last pick in the level left off,
// until `try_channel(channel)` gives a task; the next pick starts after that channel.
template <class TryChannel>
TaskHeader* pick_by_channel(const LevelTable& levels, LevelCursor& cursor, std::uint16_t level,
                            TryChannel&& try_channel) {
  const std::uint16_t first = levels.first_channel(level);
  const std::uint16_t end = levels.end_channel(level);
  if (end - first == 1) return try_channel(first);  // nothing to choose
  std::uint16_t& next = cursor.next_channel[level];
  std::uint16_t ch = next;
  for (std::uint16_t i = first; i < end; ++i) {
    if (TaskHeader* t = try_channel(ch)) {
      next = ch + 1 == end ? first : ch + 1;
      return t;
    }
    if (++ch == end) ch = first;
  }
  return nullptr;
}

// The next task for a polling thread whose own queues are `own`, or null: from the highest
// level with work (HighestFirst) or the level whose slice runs (RoundRobin); within it from its
// channels in turn, each from its EDF queue, or the thread's LIFO slot, own queue and the
// inject queue (pick_next_task's order); then stolen from other threads. `Own` provides:
//   TaskHeader*& lifo_slot()     the thread's LIFO slot (its task is not counted in a level)
//   TaskHeader* pop_local(ch)    from the thread's own queue of `ch`
//   TaskHeader* from_inject(ch)  the fallback share of `ch`'s inject queue
//   TaskHeader* steal(ch)        from another thread's queue of `ch` (null: none)
// kLevels is q.has_levels(): without levels every task is on channel 0, and that build reads
// no channel, count or cursor (a runtime without levels costs what it did before them).
template <bool kLevels, class Own>
[[gnu::always_inline]] inline TaskHeader* pick_task(RunQueues& q, LevelCursor& cursor,
                                                    std::uint32_t tick,
                                                    std::uint32_t global_queue_interval, Own& own) {
  auto in_channel = [&](std::uint16_t ch) -> TaskHeader* {
    if (kLevels && q.is_edf(ch)) return q.pop_edf(ch);
    InjectQueue& inject = q.inject(ch);
    bool from_lifo = false;
    TaskHeader* t = pick_next_task(
        tick, global_queue_interval, [&] { return inject.pop(); },
        [&]() -> TaskHeader* {
          TaskHeader*& slot = own.lifo_slot();
          if (slot != nullptr && (!kLevels || slot->channel == ch)) {
            from_lifo = true;
            return std::exchange(slot, nullptr);
          }
          return own.pop_local(ch);
        },
        [&] { return own.from_inject(ch); });
    if (kLevels && t != nullptr && !from_lifo) q.count(t, -1);
    return t;
  };
  auto steal = [&](std::uint16_t ch) -> TaskHeader* {
    if (kLevels && q.is_edf(ch)) return nullptr;  // one shared queue: in_channel looked already
    TaskHeader* t = own.steal(ch);
    if (kLevels && t != nullptr) q.count(t, -1);
    return t;
  };
  if (!kLevels || q.levels().num_channels() == 1) {
    if (TaskHeader* t = in_channel(0)) return t;
    return steal(0);
  }
  const LevelTable& levels = q.levels();
  return pick_by_level(
      levels, cursor,
      [&](std::uint16_t level) {
        const TaskHeader* slot = own.lifo_slot();
        return q.level_may_have_work(level) || (slot != nullptr && q.level_of(slot) == level);
      },
      [&](std::uint16_t level) -> TaskHeader* {
        // What this thread and the inject queues hold first, then what other threads hold.
        if (TaskHeader* t = pick_by_channel(levels, cursor, level, in_channel)) return t;
        return pick_by_channel(levels, cursor, level, steal);
      });
}

// The level rules a polling thread follows, over its scheduler's RunQueues. kLevels is
// RunQueues::has_levels(): a Picker<false> (one FIFO channel) compiles every rule away, so a
// worker written once against a Picker costs without levels what it did before them.
template <bool kLevels>
class Picker {
 public:
  explicit Picker(RunQueues& queues) noexcept : q_(queues) {}

  // The channel `t` is queued in. Without levels, 0 without a look: that load, from the
  // header of a task just spawned, before its queue push, cost W6 (chained_spawn) 3%.
  std::uint16_t channel_of(const TaskHeader* t) const noexcept { return kLevels ? t->channel : 0; }
  // Whether `t` belongs in its channel's EDF queue rather than a thread's queues.
  bool is_edf(const TaskHeader* t) const noexcept { return kLevels && q_.is_edf(t->channel); }
  // Counts `t` into (+1, before a push) or out of (-1, after a take) its level.
  void count(const TaskHeader* t, std::int64_t delta) const noexcept {
    if constexpr (kLevels) q_.count(t, delta);
  }
  // Several levels: the level is chosen at every pick, so tasks that yielded must rejoin their
  // channels before it (in a deferred list they are invisible to the choice).
  bool picks_by_level() const noexcept { return kLevels && q_.several_levels(); }
  // With levels, a due timer fires after every poll: its task may be of a higher level than
  // the work that keeps every thread busy.
  static constexpr bool kMaintainAfterEachPoll = kLevels;

  // Before poller `p` picks: the pick answers any yield request made so far.
  void before_pick(std::size_t p) noexcept {
    if (picks_by_level()) q_.yield(p).clear_before_pick();
  }
  template <class Own>
  [[gnu::always_inline]] TaskHeader* next(LevelCursor& cursor, std::uint32_t tick,
                                          std::uint32_t global_queue_interval, Own& own) {
    return pick_task<kLevels>(q_, cursor, tick, global_queue_interval, own);
  }
  // Before poller `p` polls `t`: false if a higher level's task came since the pick and `t`
  // went back (RunQueues::may_poll_now).
  template <class PushLocal>
  bool may_poll_now(std::size_t p, TaskHeader* t, PushLocal&& push_local) noexcept {
    return !picks_by_level() || q_.may_poll_now(q_.yield(p), t, push_local);
  }
  // Polls `t` on poller `p`; with levels, timed into its channel's counters: p's, or, when
  // `still_p()` is false after the poll (block_in_place took p's queues), the shared ones.
  template <class StillP>
  void poll(std::size_t p, TaskHeader* t, ReactorSlot* slot, StillP&& still_p) {
    if constexpr (kLevels) {
      const std::uint16_t channel = t->channel;  // (the poll may free t)
      const std::chrono::nanoseconds busy = timed_poll(t, slot);
      if (still_p()) {
        q_.counters(p, channel).record(busy);
      } else {
        q_.handed_off(channel).record_shared(busy);
      }
    } else {
      run_task(t, slot);
    }
  }
  // Whether the LIFO task `t` must go behind the queue: HighestFirst, a higher level waits.
  bool higher_level_waits(const TaskHeader* t) const noexcept {
    return kLevels && q_.yields_on_request() && q_.higher_level_queued(q_.level_of(t));
  }
  // Whether `t`, woken by the task running on poller `p`, may take p's LIFO slot.
  bool lifo_allowed(std::size_t p, const TaskHeader* t) const noexcept {
    return !kLevels || q_.lifo_allowed(p, t);
  }
  // A task was queued on `channel` and no parked thread was woken for it: under HighestFirst a
  // poller running lower-level work is asked to yield.
  void queued_unseen(std::uint16_t channel) noexcept {
    if (kLevels && q_.yields_on_request()) q_.request_yield(q_.levels().level_of(channel));
  }

 private:
  RunQueues& q_;
};

}  // namespace spool::detail
