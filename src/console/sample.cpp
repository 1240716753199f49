#include "console/sample.hpp"

#include <unistd.h>

#include <algorithm>
#include <optional>

#include "console/json.hpp"

namespace spool::console {
namespace {

std::uint64_t ns(std::chrono::nanoseconds d) { return static_cast<std::uint64_t>(d.count()); }

std::string state_name(WorkerState state) {
  switch (state) {
    case WorkerState::kParked:
      return "parked";
    case WorkerState::kInDriver:
      return "in_driver";
    case WorkerState::kRunning:
      break;
  }
  return "running";
}

// Each entry's part of the growth of `now` over `before` (which becomes `now`): absent for
// all when nothing grew (or busy time is not measured).
template <class Info>
void shares(std::vector<Info>& infos, std::vector<std::uint64_t>& before) {
  std::uint64_t total = 0;
  before.resize(infos.size(), 0);
  for (std::size_t i = 0; i < infos.size(); ++i) {
    total += infos[i].busy_ns - std::min(before[i], infos[i].busy_ns);
  }
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const std::uint64_t grew = infos[i].busy_ns - std::min(before[i], infos[i].busy_ns);
    if (total > 0) infos[i].share = static_cast<double>(grew) / static_cast<double>(total);
    before[i] = infos[i].busy_ns;
  }
}

// A backtrace's frames and branches, as the protocol carries them.
std::vector<FrameInfo> frames_of(const Backtrace& bt) {
  std::vector<FrameInfo> frames;
  for (const AwaitSite& f : bt.frames) frames.push_back({f.file, f.line, f.function});
  return frames;
}

// Branches nested deeper than this are left out (counted): each level is two levels of JSON
// (an array, an object), below the snapshot, the tasks and a task (three), and above a frame
// (two), and the client's reader refuses a line nested past its bound.
constexpr int kMaxBranchDepth = 16;
static_assert(3 + 2 * kMaxBranchDepth + 2 <= kMaxJsonDepth);

// The branches not listed below `bt`'s: those it omitted, and all of them past the depth.
std::optional<std::uint64_t> omitted(const Backtrace& bt, bool listed) {
  const std::size_t n = bt.omitted_branches + (listed ? 0 : bt.branches.size());
  return n == 0 ? std::nullopt : std::optional<std::uint64_t>(n);
}

std::vector<BranchInfo> branches_of(const Backtrace& bt, int depth = 1) {
  std::vector<BranchInfo> branches;
  for (const BacktraceBranch& b : bt.branches) {
    BranchInfo& info = branches.emplace_back();
    info.index = b.index;
    if (!b.waiting_on.empty()) info.waiting_on = b.waiting_on;
    info.backtrace = frames_of(b.backtrace);
    const bool deeper = depth < kMaxBranchDepth;
    if (deeper && !b.backtrace.branches.empty())
      info.branches = branches_of(b.backtrace, depth + 1);
    info.omitted_branches = omitted(b.backtrace, deeper);
  }
  return branches;
}

}  // namespace

RuntimeFacts runtime_facts(const detail::RuntimeConfig& config) {
  RuntimeFacts facts;
  facts.flavor = config.flavor == detail::RuntimeConfig::Flavor::kMultiThread ? "multi_thread"
                                                                              : "current_thread";
  for (const auto& level : config.levels) {
    for (const auto& c : level)
      facts.channels.push_back({c.complete_on_close, c.earliest_deadline_first});
  }
  if (facts.channels.empty()) facts.channels.emplace_back();  // the one FIFO "default" channel
  return facts;
}

TaskInfo task_info(const TaskSnapshot& t) {
  TaskInfo info;
  info.id = t.id;
  info.name = t.name;
  info.channel = t.channel;
  info.file = t.location.file;
  info.line = t.location.line;
  switch (t.state) {
    case TaskSnapshot::State::kRunning:
      info.state = "running";
      break;
    case TaskSnapshot::State::kScheduled:
      info.state = "scheduled";
      break;
    case TaskSnapshot::State::kIdle:
      info.state = "idle";
      break;
  }
  info.cancel_requested = t.cancel_requested;
  info.polls = t.polls;
  info.wakes = t.wakes;
  info.self_wakes = t.self_wakes;
  info.waker_clones = t.waker_clones;
  if (!t.waiting_on.empty()) info.waiting_on = t.waiting_on;
  if (t.wakers) info.wakers = *t.wakers;
  if (t.waker_drops) info.waker_drops = *t.waker_drops;
  if (t.backtrace) {
    info.backtrace = frames_of(*t.backtrace);
    if (!t.backtrace->branches.empty()) info.branches = branches_of(*t.backtrace);
    info.omitted_branches = omitted(*t.backtrace, true);
  }
  if (t.times) {
    info.busy_ns = ns(t.times->busy);
    info.scheduled_ns = ns(t.times->scheduled);
    info.idle_ns = ns(t.times->idle);
    info.longest_poll_ns = ns(t.times->longest_poll);
    info.poll_histogram.emplace(t.times->poll_histogram.begin(), t.times->poll_histogram.end());
  }
  return info;
}

Snapshot SnapshotMaker::make(const RuntimeMetrics& m, const std::vector<TaskSnapshot>& tasks,
                             std::chrono::nanoseconds uptime) {
  Snapshot s;
  s.seq = ++seq_;
  RuntimeInfo& r = s.runtime;
  r.flavor = facts_.flavor;
  r.pid = static_cast<std::uint64_t>(::getpid());
  r.uptime_ms = ns(uptime) / 1'000'000;
  r.live_tasks = m.live_tasks;
  r.inject_queue_depth = m.inject_queue_depth;
  r.blocking_threads = m.blocking_threads;
  r.idle_blocking_threads = m.idle_blocking_threads;
  r.blocking_queue_depth = m.blocking_queue_depth;
  r.timers_armed = m.timers_armed;
  r.timers_fired = m.timers_fired;
  r.io_events = m.io_events;
  r.io_registrations = m.io_registrations;
  r.io_backend = m.io_backend == IoBackend::kIoUring ? "io_uring" : "epoll";
  for (const WorkerMetrics& w : m.workers) {
    s.workers.push_back({w.polls, w.steals, w.parks, w.local_queue_depth, state_name(w.state)});
  }
  for (const LevelMetrics& l : m.levels) {
    s.levels.push_back({l.queued, l.polled, ns(l.busy_time), l.deadline_misses, std::nullopt});
  }
  for (std::size_t i = 0; i < m.channels.size(); ++i) {
    const ChannelMetrics& c = m.channels[i];
    const RuntimeFacts::Channel kind =
        i < facts_.channels.size() ? facts_.channels[i] : RuntimeFacts::Channel{};
    s.channels.push_back({c.name, c.level, kind.earliest_deadline_first ? "edf" : "fifo",
                          kind.complete_on_close, c.queued, c.polled, ns(c.busy_time),
                          c.deadline_misses, std::nullopt});
  }
  shares(s.levels, level_busy_);
  shares(s.channels, channel_busy_);
  s.tasks.reserve(tasks.size());
  for (const TaskSnapshot& t : tasks) s.tasks.push_back(task_info(t));
  std::sort(s.tasks.begin(), s.tasks.end(),
            [](const TaskInfo& a, const TaskInfo& b) { return a.id < b.id; });
  s.lints = linter_.check(s);
  return s;
}

}  // namespace spool::console
