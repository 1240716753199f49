// The console's lints: findings about a running program that a snapshot's data supports
// (docs/console.md, "Lints"). Each fires only on the data it needs: the lost-waker and long-poll
// lints read optional task fields and stay silent where the runtime does not measure them.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "console/snapshot.hpp"

namespace spool::console {

// Thresholds (tests shrink them).
struct LintOptions {
  // self_wake: a task that woke itself in more than this share of its polls...
  double self_wake_share = 0.5;
  // ...once it was polled at least this often (a few yields are normal).
  std::uint64_t self_wake_min_polls = 100;
  // never_drains: a complete-on-close channel whose tasks all waited, with no poll, this long.
  std::chrono::nanoseconds stall{std::chrono::seconds(5)};
  // long_poll: a task whose longest poll took longer than this, or that was seen in the same
  // poll this long (in two snapshots, running, with the same poll count).
  std::chrono::nanoseconds long_poll{std::chrono::milliseconds(10)};
};

// Checks snapshot after snapshot; remembers, per channel, when it was last polled (one
// Linter per subscriber: its history is that subscriber's snapshots).
class Linter {
 public:
  explicit Linter(LintOptions options = {}) : options_(options) {}
  // The lints of `s` (taken at its runtime.uptime_ms).
  std::vector<Lint> check(const Snapshot& s);

 private:
  struct ChannelHistory {
    std::uint64_t polled = 0;
    std::uint64_t since_ms = 0;  // uptime when `polled` last changed (or was first seen)
  };
  struct Running {
    std::uint64_t polls = 0;
    std::uint64_t since_ms = 0;  // uptime of the first snapshot that saw this poll
  };
  LintOptions options_;
  std::map<std::string, ChannelHistory> channels_;
  std::map<std::uint64_t, Running> running_;  // by task id: the tasks seen in a poll
};

}  // namespace spool::console
