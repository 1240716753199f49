// The settings a Builder gathers, in a header of their own: the runtime's internals (the
// schedulers, the blocking pool) read them without depending on the public Runtime API.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "spool/config.hpp"
#include "spool/io_backend.hpp"
#include "spool/task_meta.hpp"

namespace spool::detail {

/// One channel as Builder::levels describes it.
struct ChannelConfig {
  std::string name;
  bool complete_on_close = false;  // drained to completion at shutdown
  bool earliest_deadline_first = false;
};

/// Settings gathered by Builder; validated by Builder::build.
struct RuntimeConfig {
  enum class Flavor { kMultiThread, kCurrentThread };
  Flavor flavor = Flavor::kMultiThread;
  std::size_t worker_threads = 0;  // 0: one per online CPU
  std::uint32_t event_interval = 61;
  std::uint32_t global_queue_interval = 31;
  bool lifo_slot = true;
  std::size_t max_blocking_threads = 512;
  std::chrono::nanoseconds blocking_keep_alive = std::chrono::seconds(10);
  std::function<void()> on_thread_start, on_thread_stop, on_thread_park, on_thread_unpark;
  // Task hooks (Builder::on_task_spawn ...); all empty: the runtime installs no observer.
  std::function<void(const TaskMeta&)> on_task_spawn, on_task_terminate, on_before_task_poll,
      on_after_task_poll;
  std::uint64_t seed = 0x9e3779b97f4a7c15ull;
  std::string thread_name = "spool-worker";
  std::chrono::nanoseconds timer_resolution = std::chrono::milliseconds(1);
  std::size_t timer_wheels = 0;  // 0: one per worker
  bool start_paused = false;
  std::chrono::nanoseconds busy_poll{0};  // 0: a thread out of work parks at once
  // Unset: SPOOL_IO_BACKEND, else epoll; build() makes it kEpoll or kIoUring.
  std::optional<IoBackend> io_backend;
  // Priority levels, highest first, each its channels (Builder::levels); empty: one level
  // with one FIFO channel, kDefaultChannelName.
  std::vector<std::vector<ChannelConfig>> levels;
  // Between levels: highest first, or round-robin with one slice per level (Builder::schedule).
  bool round_robin = false;
  std::vector<std::chrono::nanoseconds> slices;
  std::string default_channel;  // empty: the first channel of the lowest level
  // Builder::console: the console socket's path, "" for none; unset: SPOOL_CONSOLE's.
  std::optional<std::string> console;
  // Builder::measure_task_times, or SPOOL_TASK_TIMES=1 (build_runtime).
  bool measure_task_times = false;
};

/// The name of the one channel of a runtime built without Builder::levels.
inline constexpr const char* kDefaultChannelName = "default";

/// The most worker threads a runtime may have (the idle word counts them in 16 bits).
inline constexpr std::size_t kMaxWorkerThreads = 0xffff;

}  // namespace spool::detail
