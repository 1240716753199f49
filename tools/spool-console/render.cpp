#include "render.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>

namespace spool_console {

using spool::console::BranchInfo;
using spool::console::ChannelInfo;
using spool::console::FrameInfo;
using spool::console::LevelInfo;
using spool::console::Snapshot;
using spool::console::TaskInfo;

namespace {

constexpr std::array<std::string_view, 9> kSortNames = {
    "id", "name", "channel", "state", "polls", "wakes", "self_wakes", "busy", "idle"};

std::string format(const char* fmt, auto... args) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string optional_duration(const std::optional<std::uint64_t>& ns) {
  return ns ? human_duration(*ns) : "-";
}

// A backtrace's lines, as Backtrace::to_string writes them: each frame, then each branch
// of a combinator it waits on, with its own lines indented under it.
void backtrace_lines(const std::vector<FrameInfo>& frames,
                     const std::optional<std::vector<BranchInfo>>& branches,
                     const std::optional<std::uint64_t>& omitted, const std::string& indent,
                     std::vector<std::string>& out) {
  for (const FrameInfo& f : frames) {
    out.push_back(indent + format("at %s:%llu in %s", f.file.c_str(),
                                  static_cast<unsigned long long>(f.line), f.function.c_str()));
  }
  if (branches) {
    for (const BranchInfo& b : *branches) {
      std::string head = indent + "branch " + std::to_string(b.index);
      if (b.waiting_on) head += ", waiting on " + *b.waiting_on;
      out.push_back(head + ":");
      backtrace_lines(b.backtrace, b.branches, b.omitted_branches, indent + "  ", out);
    }
  }
  if (omitted)
    out.push_back(indent + "(" + std::to_string(*omitted) + " more branches not listed)");
}

std::string location(const TaskInfo& t) {
  if (t.file.empty()) return "-";
  return t.file + ":" + std::to_string(t.line);
}

// `share` (0..1) as a bar of `width` cells and a percentage; "-" when not measured.
std::string share_bar(const std::optional<double>& share, std::size_t width) {
  if (!share) return std::string(width, ' ') + "    -";
  const double s = std::clamp(*share, 0.0, 1.0);
  const auto full = static_cast<std::size_t>(s * static_cast<double>(width) + 0.5);
  return std::string(full, '#') + std::string(width - full, '.') + format(" %3.0f%%", s * 100);
}

bool any_task_has(const Snapshot& s, std::optional<std::uint64_t> TaskInfo::*field) {
  return std::any_of(s.tasks.begin(), s.tasks.end(),
                     [&](const TaskInfo& t) { return (t.*field).has_value(); });
}

// A task's polls by duration (TaskInfo::poll_histogram), one line per bucket from the first
// to the last that counted a poll, as bars scaled to the largest.
void poll_histogram(const std::vector<std::uint64_t>& buckets, std::vector<std::string>& out) {
  const auto first = std::find_if(buckets.begin(), buckets.end(), [](auto n) { return n != 0; });
  if (first == buckets.end()) return;
  const auto last = std::find_if(buckets.rbegin(), buckets.rend(), [](auto n) { return n != 0; });
  const std::uint64_t most = *std::max_element(buckets.begin(), buckets.end());
  constexpr std::size_t kWidth = 40;
  out.push_back("  poll times:");
  for (auto it = first; it != last.base(); ++it) {
    const auto i = static_cast<std::size_t>(it - buckets.begin());
    if (i + 10 >= 64) break;  // (a longer histogram than the protocol's has no bounds here)
    // Bucket i holds polls shorter than 2^(i+10) ns; the last one, the rest (TaskTimes).
    const std::string bound = i + 1 == buckets.size()
                                  ? ">= " + human_duration(std::uint64_t{1} << (i + 9))
                                  : "< " + human_duration(std::uint64_t{1} << (i + 10));
    const auto cells = static_cast<std::size_t>((*it * kWidth + most - 1) / most);
    out.push_back(format("    %10s %s %llu", bound.c_str(), std::string(cells, '#').c_str(),
                         static_cast<unsigned long long>(*it)));
  }
}

}  // namespace

SortKey sort_key(std::string_view name) {
  for (std::size_t i = 0; i < kSortNames.size(); ++i) {
    if (kSortNames[i] == name) return static_cast<SortKey>(i);
  }
  std::string all;
  for (std::string_view n : kSortNames) all += (all.empty() ? "" : ", ") + std::string(n);
  throw std::invalid_argument("spool-console: no sort key \"" + std::string(name) +
                              "\" (keys: " + all + ")");
}

std::string_view sort_key_name(SortKey key) { return kSortNames[static_cast<std::size_t>(key)]; }

SortKey next_sort_key(SortKey key) {
  return static_cast<SortKey>((static_cast<std::size_t>(key) + 1) % kSortNames.size());
}

std::vector<const TaskInfo*> sorted_tasks(const Snapshot& s, SortKey key, bool reverse) {
  std::vector<const TaskInfo*> out;
  for (const TaskInfo& t : s.tasks) out.push_back(&t);
  // Counts and times: largest first; the rest: smallest first.
  auto before = [key](const TaskInfo* a, const TaskInfo* b) {
    auto desc = [](auto x, auto y) { return x > y; };
    auto asc = [](const auto& x, const auto& y) { return x < y; };
    switch (key) {
      case SortKey::kId:
        return asc(a->id, b->id);
      case SortKey::kName:
        return asc(a->name, b->name);
      case SortKey::kChannel:
        return asc(a->channel, b->channel);
      case SortKey::kState:
        return asc(a->state, b->state);
      case SortKey::kPolls:
        return desc(a->polls, b->polls);
      case SortKey::kWakes:
        return desc(a->wakes, b->wakes);
      case SortKey::kSelfWakes:
        return desc(a->self_wakes, b->self_wakes);
      case SortKey::kBusy:
        return desc(a->busy_ns.value_or(0), b->busy_ns.value_or(0));
      case SortKey::kIdle:
        return desc(a->idle_ns.value_or(0), b->idle_ns.value_or(0));
    }
    return false;
  };
  std::stable_sort(out.begin(), out.end(), before);
  if (reverse) std::reverse(out.begin(), out.end());
  return out;
}

std::string summary_line(const Snapshot& s) {
  return format(
      "pid %llu  %s  %zu worker(s)  %zu task(s)  uptime %s  io %s  dropped %llu",
      static_cast<unsigned long long>(s.runtime.pid), s.runtime.flavor.c_str(), s.workers.size(),
      s.tasks.size(), human_duration(s.runtime.uptime_ms * 1'000'000).c_str(),
      s.runtime.io_backend.c_str(), static_cast<unsigned long long>(s.runtime.dropped_snapshots));
}

std::vector<std::string> tasks_table(const Snapshot& s, const std::vector<const TaskInfo*>& tasks) {
  const bool busy = any_task_has(s, &TaskInfo::busy_ns);
  const bool idle = any_task_has(s, &TaskInfo::idle_ns);
  auto row = [&](const std::string& id, const std::string& name, const std::string& channel,
                 const std::string& state, const std::string& polls, const std::string& wakes,
                 const std::string& self, const std::string& busy_text,
                 const std::string& idle_text, const std::string& where) {
    std::string line =
        format("%6s  %-24.24s %-10.10s %-9s %8s %8s %8s", id.c_str(), name.c_str(), channel.c_str(),
               state.c_str(), polls.c_str(), wakes.c_str(), self.c_str());
    if (busy) line += format(" %9s", busy_text.c_str());
    if (idle) line += format(" %9s", idle_text.c_str());
    return line + "  " + where;
  };
  std::vector<std::string> out;
  out.push_back(
      row("ID", "NAME", "CHANNEL", "STATE", "POLLS", "WAKES", "SELF", "BUSY", "IDLE", "LOCATION"));
  for (const TaskInfo* t : tasks) {
    std::string state = t->state + (t->cancel_requested ? "!" : "");
    out.push_back(row(std::to_string(t->id), t->name.empty() ? "-" : t->name, t->channel, state,
                      std::to_string(t->polls), std::to_string(t->wakes),
                      std::to_string(t->self_wakes), optional_duration(t->busy_ns),
                      optional_duration(t->idle_ns), location(*t)));
  }
  return out;
}

std::vector<std::string> task_details(const TaskInfo& t) {
  std::vector<std::string> out;
  out.push_back(format("task %llu \"%s\"", static_cast<unsigned long long>(t.id), t.name.c_str()));
  out.push_back("  channel        " + t.channel);
  out.push_back("  state          " + t.state + (t.cancel_requested ? " (cancel requested)" : ""));
  out.push_back("  spawned at     " + location(t));
  out.push_back(format("  polls          %llu", static_cast<unsigned long long>(t.polls)));
  out.push_back(format("  wakes          %llu (by itself %llu, by others %llu)",
                       static_cast<unsigned long long>(t.wakes),
                       static_cast<unsigned long long>(t.self_wakes),
                       static_cast<unsigned long long>(t.wakes - std::min(t.wakes, t.self_wakes))));
  out.push_back("  busy           " + optional_duration(t.busy_ns));
  out.push_back("  scheduled      " + optional_duration(t.scheduled_ns));
  out.push_back("  idle           " + optional_duration(t.idle_ns));
  out.push_back("  longest poll   " + optional_duration(t.longest_poll_ns));
  if (t.poll_histogram) poll_histogram(*t.poll_histogram, out);
  std::string wakers = "  wakers         ";
  wakers += t.wakers ? std::to_string(*t.wakers) + " live" : "-";
  if (t.waker_clones) {
    wakers += " (" + std::to_string(*t.waker_clones) + " made";
    if (t.waker_drops) wakers += ", " + std::to_string(*t.waker_drops) + " dropped";
    wakers += ")";
  }
  out.push_back(wakers);
  out.push_back("  waiting on     " + t.waiting_on.value_or("-"));
  if (t.backtrace) {
    out.push_back("  backtrace:");
    backtrace_lines(*t.backtrace, t.branches, t.omitted_branches, "    ", out);
  } else if (t.state != "idle") {
    // Only an idle task's chain is read (a poll moves it): not one that runs or is queued.
    out.push_back("  backtrace      (read while the task is idle; it is " + t.state + ")");
  } else {
    out.push_back("  backtrace      (not measured by this runtime)");
  }
  out.push_back("  (\"-\": not measured by this runtime)");
  return out;
}

std::vector<std::string> workers_table(const Snapshot& s) {
  std::vector<std::string> out;
  out.push_back(format("%6s %-10s %12s %10s %10s %8s", "WORKER", "STATE", "POLLS", "STEALS",
                       "PARKS", "QUEUE"));
  for (std::size_t i = 0; i < s.workers.size(); ++i) {
    const auto& w = s.workers[i];
    out.push_back(format("%6zu %-10s %12llu %10llu %10llu %8llu", i, w.state.value_or("-").c_str(),
                         static_cast<unsigned long long>(w.polls),
                         static_cast<unsigned long long>(w.steals),
                         static_cast<unsigned long long>(w.parks),
                         static_cast<unsigned long long>(w.local_queue_depth)));
  }
  out.push_back(format("inject queue %llu  blocking threads %llu (%llu idle, %llu queued)",
                       static_cast<unsigned long long>(s.runtime.inject_queue_depth),
                       static_cast<unsigned long long>(s.runtime.blocking_threads),
                       static_cast<unsigned long long>(s.runtime.idle_blocking_threads),
                       static_cast<unsigned long long>(s.runtime.blocking_queue_depth)));
  return out;
}

std::vector<std::string> channels_table(const Snapshot& s, std::size_t bar_width) {
  std::vector<std::string> out;
  out.push_back(format("%-22s %-*s %8s %10s %8s", "LEVEL / CHANNEL",
                       static_cast<int>(bar_width + 5), "SHARE", "QUEUED", "POLLED", "MISSED"));
  for (std::size_t l = 0; l < s.levels.size(); ++l) {
    const LevelInfo& level = s.levels[l];
    out.push_back(format("level %-16zu %s %8llu %10llu %8llu", l,
                         share_bar(level.share, bar_width).c_str(),
                         static_cast<unsigned long long>(level.queued),
                         static_cast<unsigned long long>(level.polled),
                         static_cast<unsigned long long>(level.deadline_misses)));
    for (const ChannelInfo& c : s.channels) {
      if (c.level != l) continue;
      std::string label = "  " + c.name + (c.kind == "edf" ? " (edf)" : "") +
                          (c.complete_on_close ? " (drain)" : "");
      out.push_back(format(
          "%-22.22s %s %8llu %10llu %8llu", label.c_str(), share_bar(c.share, bar_width).c_str(),
          static_cast<unsigned long long>(c.queued), static_cast<unsigned long long>(c.polled),
          static_cast<unsigned long long>(c.deadline_misses)));
    }
  }
  return out;
}

std::vector<std::string> lints_list(const Snapshot& s) {
  std::vector<std::string> out;
  for (const auto& l : s.lints) out.push_back("[" + l.kind + "] " + l.message);
  if (out.empty()) out.push_back("no lints");
  return out;
}

std::vector<std::string> whole_text(const Snapshot& s, SortKey key, bool reverse) {
  std::vector<std::string> out;
  auto section = [&](const std::string& title, const std::vector<std::string>& lines) {
    out.push_back("");
    out.push_back("== " + title);
    out.insert(out.end(), lines.begin(), lines.end());
  };
  out.push_back("spool-console: " + summary_line(s));
  section("tasks (by " + std::string(sort_key_name(key)) + ")",
          tasks_table(s, sorted_tasks(s, key, reverse)));
  section("workers", workers_table(s));
  section("levels and channels (share of poll time)", channels_table(s, 20));
  section("lints", lints_list(s));
  return out;
}

void make_printable(Snapshot& s) {
  auto clean = [](std::string& text) {
    for (char& c : text) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) c = '?';
    }
  };
  auto clean_frames = [&](std::vector<FrameInfo>& frames) {
    for (FrameInfo& f : frames) {
      clean(f.file);
      clean(f.function);
    }
  };
  auto clean_branches = [&](auto& self, std::optional<std::vector<BranchInfo>>& branches) -> void {
    if (!branches) return;
    for (BranchInfo& b : *branches) {
      if (b.waiting_on) clean(*b.waiting_on);
      clean_frames(b.backtrace);
      self(self, b.branches);
    }
  };
  clean(s.runtime.flavor);
  clean(s.runtime.io_backend);
  for (ChannelInfo& c : s.channels) {
    clean(c.name);
    clean(c.kind);
  }
  for (auto& w : s.workers) {
    if (w.state) clean(*w.state);
  }
  for (TaskInfo& t : s.tasks) {
    for (std::string* text : {&t.name, &t.channel, &t.file, &t.state}) clean(*text);
    if (t.waiting_on) clean(*t.waiting_on);
    if (t.backtrace) clean_frames(*t.backtrace);
    clean_branches(clean_branches, t.branches);
  }
  for (auto& l : s.lints) {
    clean(l.kind);
    clean(l.message);
    if (l.channel) clean(*l.channel);
  }
}

std::string human_duration(std::uint64_t ns) {
  const double d = static_cast<double>(ns);
  if (ns < 1'000) return format("%llu ns", static_cast<unsigned long long>(ns));
  if (ns < 1'000'000) return format("%.1f us", d / 1e3);
  if (ns < 1'000'000'000) return format("%.1f ms", d / 1e6);
  if (ns < 60'000'000'000ull) return format("%.2f s", d / 1e9);
  const unsigned long long secs = ns / 1'000'000'000ull;
  return format("%llum%02llus", secs / 60, secs % 60);
}

}  // namespace spool_console
