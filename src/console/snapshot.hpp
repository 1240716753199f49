// The console's snapshot: what one line of the protocol carries (docs/console.md lists every
// field), as a struct both the server (which fills it from the public introspection API) and
// spool-console (which parses it) use. Optional fields are the ones a runtime may not measure:
// absent means "not measured", never zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spool::console {

// The protocol's version: the "v" member of every line. A reader refuses another version.
inline constexpr int kProtocolVersion = 1;
// The longest interval_ms a subscription may ask for (a day); the server refuses a longer one.
inline constexpr std::int64_t kMaxIntervalMs = 24 * 60 * 60 * 1000;

// The runtime as a whole.
struct RuntimeInfo {
  std::string flavor;  // "multi_thread" or "current_thread"
  std::uint64_t pid = 0;
  std::uint64_t uptime_ms = 0;  // since the console started serving (the runtime's build)
  std::uint64_t live_tasks = 0;
  std::uint64_t inject_queue_depth = 0;
  std::uint64_t blocking_threads = 0;
  std::uint64_t idle_blocking_threads = 0;
  std::uint64_t blocking_queue_depth = 0;
  std::uint64_t timers_armed = 0;
  std::uint64_t timers_fired = 0;
  std::uint64_t io_events = 0;
  std::uint64_t io_registrations = 0;
  std::string io_backend;               // "epoll" or "io_uring"
  std::uint64_t dropped_snapshots = 0;  // this subscriber's, dropped on a full buffer
};

// One worker (RuntimeMetrics::workers).
struct WorkerInfo {
  std::uint64_t polls = 0;
  std::uint64_t steals = 0;
  std::uint64_t parks = 0;
  std::uint64_t local_queue_depth = 0;
  // "running", "parked" or "in_driver" (WorkerState); absent from older runtimes.
  std::optional<std::string> state;
};

// One priority level (RuntimeMetrics::levels).
struct LevelInfo {
  std::uint64_t queued = 0;
  std::uint64_t polled = 0;
  std::uint64_t busy_ns = 0;
  std::uint64_t deadline_misses = 0;
  // Of the runtime's poll time since the previous snapshot, the part this level took
  // (0..1); absent when busy time is not measured (one channel) or nothing ran.
  std::optional<double> share;
};

// One channel (RuntimeMetrics::channels and its configuration).
struct ChannelInfo {
  std::string name;
  std::uint64_t level = 0;
  std::string kind;  // "fifo" or "edf"
  bool complete_on_close = false;
  std::uint64_t queued = 0;
  std::uint64_t polled = 0;
  std::uint64_t busy_ns = 0;
  std::uint64_t deadline_misses = 0;
  std::optional<double> share;  // as LevelInfo::share
};

// One frame of a task's async backtrace, innermost first.
struct FrameInfo {
  std::string file;
  std::uint64_t line = 0;
  std::string function;
};

// One unfinished branch of a combinator a task waits on (spool::BacktraceBranch).
struct BranchInfo {
  std::uint64_t index = 0;                          // its position among the combinator's futures
  std::optional<std::string> waiting_on;            // what it waits on (a type name)
  std::vector<FrameInfo> backtrace;                 // its own chain, innermost first
  std::optional<std::vector<BranchInfo>> branches;  // of a combinator it waits on in turn
  std::optional<std::uint64_t> omitted_branches;    // more, not listed
};

// One live task (TaskSnapshot, and the optional fields a runtime may measure).
struct TaskInfo {
  std::uint64_t id = 0;
  std::string name;
  std::string channel;
  std::string file;  // spawn location
  std::uint64_t line = 0;
  std::string state;  // "running", "scheduled" or "idle"
  bool cancel_requested = false;
  std::uint64_t polls = 0;
  std::uint64_t wakes = 0;
  std::uint64_t self_wakes = 0;
  // Optional: absent = not measured.
  std::optional<std::uint64_t> busy_ns;          // time inside polls
  std::optional<std::uint64_t> scheduled_ns;     // time between a wake and its poll
  std::optional<std::uint64_t> idle_ns;          // time waiting for a wake
  std::optional<std::uint64_t> longest_poll_ns;  // the longest single poll
  // Polls by duration, TaskTimes::kPollBuckets buckets (TaskTimes::poll_histogram).
  std::optional<std::vector<std::uint64_t>> poll_histogram;
  std::optional<std::uint64_t> wakers;        // live Wakers and AbortHandles (idle tasks)
  std::optional<std::uint64_t> waker_clones;  // Wakers and AbortHandles made (mod 2^26)
  std::optional<std::uint64_t> waker_drops;   // of those, the ones gone (with `wakers`)
  std::optional<std::string> waiting_on;      // the leaf it waits on (a type name)
  std::optional<std::vector<FrameInfo>> backtrace;
  std::optional<std::vector<BranchInfo>> branches;  // of a combinator it waits on
  std::optional<std::uint64_t> omitted_branches;    // more, not listed
};

// A finding about the runtime (lints.hpp).
struct Lint {
  std::string kind;                    // "self_wake", "never_drains", "lost_waker", "long_poll"
  std::optional<std::uint64_t> task;   // the task it is about
  std::optional<std::string> channel;  // the channel it is about
  std::string message;
};

// One snapshot: one line of the protocol.
struct Snapshot {
  int v = kProtocolVersion;
  std::uint64_t seq = 0;  // this subscriber's snapshots, from 1
  RuntimeInfo runtime;
  std::vector<WorkerInfo> workers;
  std::vector<LevelInfo> levels;
  std::vector<ChannelInfo> channels;
  std::vector<TaskInfo> tasks;  // by id
  std::vector<Lint> lints;
};

// The snapshot as one line of JSON (no newline).
std::string to_json(const Snapshot& s);
// Parses one line; throws std::invalid_argument on malformed JSON, a missing member or
// another protocol version (the message says which).
Snapshot snapshot_from_json(std::string_view line);

}  // namespace spool::console
