// spool-bench harness: configuration, repetition and median, reporting, the completion
// signal, and the workload registry. The methodology mirrors the tokio peer
// (shared/peers/tokio/src/main.rs) so that the figures compare fairly:
//   - worker threads = sysconf(_SC_NPROCESSORS_ONLN), overridden by BENCH_WORKERS;
//   - one fresh runtime per workload, reused by all its repetitions;
//   - 1 warm-up repetition, then at least BENCH_MIN_REPS (default 5, never fewer than 5)
//     measured ones, continuing until BENCH_BUDGET_MS (default 2000) of measured time has
//     passed, capped at BENCH_MAX_REPS (default 501);
//   - the reported figure is the median over the measured repetitions (the mean of the two
//     middle ones for an even count); ns/op = repetition wall time / ops per repetition.
// stdout carries only `RESULT spool <workload> <value> <unit>` lines; all else is stderr.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "spool/runtime.hpp"

namespace spool_bench {

using Clock = std::chrono::steady_clock;

struct Config {
  std::size_t workers = 1;
  std::size_t min_reps = 5;
  std::size_t max_reps = 501;
  std::chrono::milliseconds budget{2000};
  // spool only, for comparisons of its own settings (the peers have no such knobs):
  std::size_t timer_wheels = 0;                          // Builder::timer_wheels
  std::chrono::nanoseconds timer_resolution{1'000'000};  // Builder::timer_resolution
  // Builder::io_backend (unset: the runtime's default); set by on_each_backend (W10, W17).
  std::optional<spool::IoBackend> io_backend;
  // Which empty task hooks are installed, to measure what hooks cost the runtime itself
  // (docs/observability.md): none, all four, or only on_task_spawn and on_task_terminate.
  enum class TaskHooks { kNone, kAll, kSpawnAndTerminate };
  TaskHooks task_hooks = TaskHooks::kNone;
};

// Reads BENCH_WORKERS, BENCH_MIN_REPS, BENCH_MAX_REPS and BENCH_BUDGET_MS, and spool's own
// BENCH_TIMER_WHEELS (default 0: one per worker), BENCH_TIMER_RESOLUTION_US (default 1000) and
// BENCH_TASK_HOOKS (1: the four task hooks installed, empty; 2: only the spawn and terminate
// hooks; default 0: none).
Config config_from_env();

// A fresh multi-thread runtime with cfg.workers worker threads; with `levels` (highest
// first, scheduled HighestFirst) unless it is empty, else with the one "default" channel.
// The watchdog can print its task dump if the workload hangs.
spool::Runtime make_runtime(const Config& cfg, std::vector<spool::Level> levels = {});

// A wrong result (or any failed check) in a workload: main reports it and exits non-zero.
class BenchFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws BenchFailure(what) when !ok. For the outside (measuring) thread.
void check(bool ok, const std::string& what);
// For a check inside a spawned task, where an exception would be lost with the task:
// prints `what` and ends the process with exit status 1.
void check_in_task(bool ok, const char* what);

// W10's and W17's timed phase: each of `streams` (connected before, untimed) runs in its own
// task `round_trips` round trips of a 64-byte message filled with its index (write_all,
// then read_exact; the echo is checked). The wall time until every one has ended.
template <class Stream>
spool::Task<Clock::duration> timed_echo_clients(std::vector<Stream> streams,
                                                std::size_t round_trips) {
  auto client = [](Stream s, std::uint8_t id, std::size_t n) -> spool::Task<void> {
    std::array<std::uint8_t, 64> out{};
    out.fill(id);
    std::array<std::uint8_t, 64> in{};
    for (std::size_t i = 0; i < n; ++i) {
      co_await s.write_all(out);
      co_await s.read_exact(in);
    }
    check_in_task(in == out, "echo: bad echo");
  };
  const auto t0 = Clock::now();
  std::vector<spool::JoinHandle<void>> clients;
  clients.reserve(streams.size());
  for (std::size_t c = 0; c < streams.size(); ++c) {
    clients.push_back(
        spool::spawn(client(std::move(streams[c]), static_cast<std::uint8_t>(c), round_trips)));
  }
  for (auto& h : clients) co_await h;
  co_return Clock::now() - t0;
}
// Runs `run` on epoll under the name `name` (tcp_echo), then on io_uring under
// `name`@io_uring, which is skipped (saying why on stderr) where io_uring is refused.
// BENCH_IO_BACKEND=epoll (io_uring) runs only the first (the second).
void on_each_backend(const Config& cfg, const char* name,
                     void (*run)(Config cfg, const char* name));

// One warm-up call, then measured calls until both cfg.min_reps and the time budget are
// satisfied (or cfg.max_reps is reached); exactly the tokio peer's `measure`. `once`
// returns what one repetition measured (its duration, or several figures).
template <class F>
auto measure(const Config& cfg, F&& once) {
  (void)once();  // warm-up
  std::vector<decltype(once())> out;
  const auto started = Clock::now();
  const std::size_t cap = cfg.max_reps > cfg.min_reps ? cfg.max_reps : cfg.min_reps;
  while (out.size() < cfg.min_reps || (Clock::now() - started < cfg.budget && out.size() < cap)) {
    out.push_back(once());
  }
  return out;
}

double median(std::vector<double> v);

// Prints the statistics of `values` (one per repetition, in `unit`) on stderr under `label`
// and returns their median (the tokio peer's `summarize`).
double summarize(std::string_view label, const std::vector<double>& values, std::string_view unit);
// Prints `RESULT spool <workload> <value> <unit>` on stdout, with the tokio peer's
// precision (3 decimals for ms, 2 otherwise).
void result(std::string_view workload, double value, std::string_view unit);

// Prints the sample statistics of `samples` (durations of one repetition each) on stderr
// and `RESULT spool <workload> <median ns/op> ns/op` on stdout.
void report_ns_per_op(std::string_view workload, const std::vector<Clock::duration>& samples,
                      std::size_t ops_per_rep);
// The same statistics on stderr only (informational figures that are not a workload).
void info_ns_per_op(std::string_view label, const std::vector<Clock::duration>& samples,
                    std::size_t ops_per_rep);

// The completion signal: an atomic countdown whose last count_down() wakes the thread
// blocked in wait() (a futex through std::atomic::wait). Re-armed for every repetition.
// Keep it alive until the runtime whose tasks use it is destroyed.
class Latch {
 public:
  void arm(std::int64_t n) noexcept {
    remaining_.store(n, std::memory_order_relaxed);
    fired_.store(0, std::memory_order_release);
  }
  void count_down() noexcept {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      fired_.store(1, std::memory_order_release);
      fired_.notify_all();
    }
  }
  void wait() const noexcept {
    while (fired_.load(std::memory_order_acquire) == 0) fired_.wait(0, std::memory_order_acquire);
  }

 private:
  std::atomic<std::int64_t> remaining_{0};
  std::atomic<std::uint32_t> fired_{0};
};

// A workload: its id in WORKLOADS.md (W1...), its name (the RESULT line's <workload>), and
// the function that builds its runtime, measures it and reports.
struct Workload {
  const char* id;
  const char* name;
  void (*run)(const Config& cfg);
};

// The workloads of each group, in id order (spawn_many.cpp, scheduling.cpp, timers.cpp,
// fork_join.cpp, sync.cpp, net.cpp, file_read.cpp, process.cpp, streams.cpp, priority.cpp,
// shares.cpp).
std::vector<Workload> spawn_workloads();
std::vector<Workload> scheduling_workloads();
std::vector<Workload> timer_workloads();
std::vector<Workload> fork_join_workloads();
std::vector<Workload> sync_workloads();
std::vector<Workload> net_workloads();
std::vector<Workload> framed_lines_workloads();
std::vector<Workload> file_workloads();
std::vector<Workload> process_workloads();
std::vector<Workload> stream_workloads();
std::vector<Workload> priority_workloads();
std::vector<Workload> shares_workloads();
// W17 (tls.cpp), built only with spool::tls; none otherwise (no_tls.cpp).
std::vector<Workload> tls_workloads();

// Hang detection: while a workload runs, a watchdog thread waits BENCH_WATCHDOG_S
// (default 300) seconds; past that it prints which workload hung and the task dump of the
// runtime made last by make_runtime, then ends the process with exit status 124.
void watchdog_start(const Workload& w);
void watchdog_stop();

}  // namespace spool_bench
