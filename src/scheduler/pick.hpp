// The order in which a scheduler takes its next task, shared by both flavours: which level
// (docs/levels.md), which channel of the level, and, within a channel, which queue.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <vector>

#include "scheduler/levels.hpp"
#include "spool/levels.hpp"
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

}  // namespace spool::detail
