// spool::RuntimeMetrics: a snapshot of a runtime's counters.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "spool/config.hpp"
#include "spool/io_backend.hpp"

namespace spool {

/// What a worker thread was doing when the metrics were read.
enum class WorkerState : std::uint8_t {
  kRunning,   ///< running tasks, or looking for them
  kParked,    ///< parked: it found no work
  kInDriver,  ///< parked in the I/O and timer driver, waiting for events for the runtime
};

/// Counters of one worker (cumulative since the runtime started, except queue depth and state).
struct WorkerMetrics {
  std::uint64_t polls = 0;            ///< tasks polled
  std::uint64_t steals = 0;           ///< steal operations that moved at least one task here
  std::uint64_t parks = 0;            ///< times the worker parked for lack of work
  std::size_t local_queue_depth = 0;  ///< tasks in its local queue now
  WorkerState state = WorkerState::kRunning;  ///< what it was doing
};

/// Counters of one channel (Builder::levels; cumulative, except queue depth).
struct ChannelMetrics {
  std::string name;          ///< the channel's name
  std::size_t level = 0;     ///< its level (0 is the highest)
  std::size_t queued = 0;    ///< its tasks waiting in run queues now (a worker's LIFO slot aside)
  std::uint64_t polled = 0;  ///< polls of its tasks
  /// Wall time spent polling its tasks; measured only when the runtime has more than one
  /// channel (a runtime without levels reports zero and pays no clock reads).
  std::chrono::nanoseconds busy_time{0};
  /// Earliest-deadline-first channels: tasks that started after their deadline.
  std::uint64_t deadline_misses = 0;
};

/// Counters of one priority level: the sums over its channels.
struct LevelMetrics {
  std::size_t queued = 0;    ///< its tasks waiting in run queues now
  std::uint64_t polled = 0;  ///< polls of its tasks
  /// Wall time spent polling its tasks (see ChannelMetrics).
  std::chrono::nanoseconds busy_time{0};
  /// Deadline misses of its earliest-deadline-first channels.
  std::uint64_t deadline_misses = 0;
};

/// A snapshot of a runtime's counters, taken while it runs (Runtime::metrics()).
struct RuntimeMetrics {
  std::vector<WorkerMetrics> workers;     ///< one per worker (one for a current-thread runtime)
  std::size_t inject_queue_depth = 0;     ///< tasks in the shared inject queue now
  std::size_t live_tasks = 0;             ///< spawned tasks not yet completed
  std::size_t blocking_threads = 0;       ///< blocking-pool threads alive now
  std::size_t idle_blocking_threads = 0;  ///< of which idle
  std::size_t blocking_queue_depth = 0;   ///< blocking calls waiting for a thread
  std::uint64_t timers_armed = 0;         ///< timers registered with the time driver (resets too)
  std::uint64_t timers_fired = 0;         ///< timers whose deadline passed
  std::uint64_t timers_cancelled = 0;     ///< registered timers dropped or reset before firing
  std::uint64_t driver_parks = 0;         ///< times a thread parked in (or polled) the driver stack
  std::size_t timer_wheels = 0;           ///< timer wheels (Builder::timer_wheels)
  std::uint64_t io_events = 0;            ///< readiness events the I/O driver dispatched
  std::size_t io_registrations = 0;       ///< sockets registered with the I/O driver now
  std::uint64_t io_accept_backoffs = 0;   ///< accepts that waited: no file descriptor was left
  IoBackend io_backend = IoBackend::kEpoll;  ///< the I/O driver's interface: kEpoll or kIoUring
  /// io_uring: socket polls the kernel ended on its own (the thread that submitted one exited,
  /// or the completion queue overflowed) and the driver armed again
  std::uint64_t io_rearms = 0;
  /// spool::fs operations (one per call, a read_dir batch each) run on the blocking pool
  std::uint64_t fs_blocking_ops = 0;
  /// spool::fs operations submitted to a worker's own io_uring instead (the io_uring
  /// backend, where the kernel has the operation; docs/fs.md, "The ring path")
  std::uint64_t fs_ring_ops = 0;
  /// spool::fs reads that the page cache answered at once, on the polling thread
  /// (preadv2 with RWF_NOWAIT): neither the pool nor a ring (docs/fs.md, "Paths")
  std::uint64_t fs_inline_reads = 0;
  /// Worker threads' own io_uring rings made so far (one per worker thread that ran a file
  /// operation on the io_uring backend)
  std::uint64_t worker_rings = 0;
  /// Of those, the rings set up with SINGLE_ISSUER|DEFER_TASKRUN (Linux 6.1; older kernels
  /// give COOP_TASKRUN or neither)
  std::uint64_t worker_rings_deferred_taskrun = 0;
  /// Rings (or their watches) the kernel refused: those threads' operations take the pool
  std::uint64_t worker_rings_refused = 0;
  std::vector<LevelMetrics> levels;      ///< one per priority level, highest first
  std::vector<ChannelMetrics> channels;  ///< one per channel, highest level first
};

}  // namespace spool
