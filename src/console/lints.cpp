#include "console/lints.hpp"

#include <cstdio>

namespace spool::console {
namespace {

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string task_label(const TaskInfo& t) {
  std::string label = "task " + std::to_string(t.id);
  if (!t.name.empty()) label += " \"" + t.name + "\"";
  return label;
}

}  // namespace

std::vector<Lint> Linter::check(const Snapshot& s) {
  std::vector<Lint> out;
  const auto stall_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.stall).count());
  const auto long_poll_ns = static_cast<std::uint64_t>(options_.long_poll.count());

  std::map<std::uint64_t, Running> running;
  for (const TaskInfo& t : s.tasks) {
    // Running in two snapshots with the same poll count: the same poll (the count changes
    // with every poll), in progress since at least the first of them.
    bool in_long_poll = false;
    if (t.state == "running") {
      const auto it = running_.find(t.id);
      const Running r = it != running_.end() && it->second.polls == t.polls
                            ? it->second
                            : Running{t.polls, s.runtime.uptime_ms};
      running.emplace(t.id, r);
      const std::uint64_t ms = s.runtime.uptime_ms - r.since_ms;
      if (ms > 0 && ms * 1'000'000 >= long_poll_ns) {
        in_long_poll = true;
        out.push_back({"long_poll", t.id, std::nullopt,
                       format("%s has been inside one poll for at least %.1f s: it blocks its "
                              "worker (spawn_blocking or block_in_place for blocking work)",
                              task_label(t).c_str(), static_cast<double>(ms) / 1e3)});
      }
    }
    if (t.polls >= options_.self_wake_min_polls &&
        static_cast<double>(t.self_wakes) >
            options_.self_wake_share * static_cast<double>(t.polls)) {
      out.push_back({"self_wake", t.id, std::nullopt,
                     format("%s woke itself in %llu of its %llu polls: a busy loop of yields, or a "
                            "leaf that wakes its own waker without waiting",
                            task_label(t).c_str(), static_cast<unsigned long long>(t.self_wakes),
                            static_cast<unsigned long long>(t.polls))});
    }
    // No Waker (nor AbortHandle) left that could wake it.
    if (t.state == "idle" && t.wakers && *t.wakers == 0) {
      out.push_back({"lost_waker", t.id, std::nullopt,
                     format("%s waits, but every waker it gave out was dropped: nothing can "
                            "wake it (a leaf future that returned pending without keeping the "
                            "waker)",
                            task_label(t).c_str())});
    }
    if (!in_long_poll && t.longest_poll_ns && *t.longest_poll_ns > long_poll_ns) {
      out.push_back({"long_poll", t.id, std::nullopt,
                     format("%s ran %.1f ms in one poll: it blocks its worker (spawn_blocking or "
                            "block_in_place for blocking work)",
                            task_label(t).c_str(), static_cast<double>(*t.longest_poll_ns) / 1e6)});
    }
  }

  running_ = std::move(running);

  for (const ChannelInfo& c : s.channels) {
    ChannelHistory& h =
        channels_.try_emplace(c.name, ChannelHistory{c.polled, s.runtime.uptime_ms}).first->second;
    if (h.polled != c.polled) h = {c.polled, s.runtime.uptime_ms};
    if (!c.complete_on_close) continue;
    std::uint64_t waiting = 0;
    bool active = false;
    for (const TaskInfo& t : s.tasks) {
      if (t.channel != c.name) continue;
      ++waiting;
      active = active || t.state != "idle";
    }
    const std::uint64_t quiet_ms = s.runtime.uptime_ms - h.since_ms;
    if (waiting > 0 && !active && c.queued == 0 && quiet_ms >= stall_ms) {
      out.push_back({"never_drains", std::nullopt, c.name,
                     format("channel \"%s\" is complete-on-close and its %llu task(s) have all "
                            "waited %.1f s with no poll: a shutdown waits for them until they "
                            "finish (or shutdown_timeout)",
                            c.name.c_str(), static_cast<unsigned long long>(waiting),
                            static_cast<double>(quiet_ms) / 1e3)});
    }
  }
  return out;
}

}  // namespace spool::console
