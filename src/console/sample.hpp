// Builds snapshots from the public introspection API (Runtime::metrics(), Runtime::tasks())
// and what the runtime's configuration says about its channels.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "console/lints.hpp"
#include "console/snapshot.hpp"
#include "spool/detail/runtime_config.hpp"
#include "spool/metrics.hpp"
#include "spool/task_meta.hpp"

namespace spool::console {

// What does not change while a runtime runs: its flavour and its channels' kinds, in
// RuntimeMetrics::channels' order (highest level first).
struct RuntimeFacts {
  struct Channel {
    bool complete_on_close = false;
    bool earliest_deadline_first = false;
  };
  std::string flavor;  // "multi_thread" or "current_thread"
  std::vector<Channel> channels;
};

// The facts of a runtime built from `config`.
RuntimeFacts runtime_facts(const detail::RuntimeConfig& config);

// The protocol's view of one task: the single place that reads TaskSnapshot's fields (the
// optional ones included, as the runtime adds them).
TaskInfo task_info(const TaskSnapshot& t);

// Makes one subscriber's snapshots: numbers them and computes each level's and channel's
// share of the poll time since the previous one, and the lints.
class SnapshotMaker {
 public:
  explicit SnapshotMaker(RuntimeFacts facts, LintOptions lints = {})
      : facts_(std::move(facts)), linter_(lints) {}

  // A snapshot of the runtime as `metrics` and `tasks` saw it, `uptime` after it started.
  Snapshot make(const RuntimeMetrics& metrics, const std::vector<TaskSnapshot>& tasks,
                std::chrono::nanoseconds uptime);

 private:
  RuntimeFacts facts_;
  Linter linter_;
  std::uint64_t seq_ = 0;
  // Busy times at the previous snapshot, to compute shares from.
  std::vector<std::uint64_t> level_busy_, channel_busy_;
};

}  // namespace spool::console
