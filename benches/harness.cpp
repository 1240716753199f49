#include "harness.hpp"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

namespace spool_bench {

namespace {

std::optional<std::size_t> env_size(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  char* end = nullptr;
  unsigned long long n = std::strtoull(v, &end, 10);
  while (end != nullptr && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
  if (end == v || end == nullptr || *end != '\0') return std::nullopt;  // as tokio: ignored
  return static_cast<std::size_t>(n);
}

// BENCH_TASK_HOOKS: exactly "0", "1" or "2" (a typo must not measure the wrong setting).
Config::TaskHooks task_hooks_from_env() {
  const char* v = std::getenv("BENCH_TASK_HOOKS");
  const std::string_view s = v == nullptr ? "0" : v;
  if (s == "0") return Config::TaskHooks::kNone;
  if (s == "1") return Config::TaskHooks::kAll;
  if (s == "2") return Config::TaskHooks::kSpawnAndTerminate;
  throw std::invalid_argument("BENCH_TASK_HOOKS='" + std::string(s) +
                              "': give 0 (no hooks), 1 (all four, empty) or 2 (only the spawn "
                              "and terminate hooks)");
}

std::size_t online_cpus() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n >= 1) return static_cast<std::size_t>(n);
  unsigned h = std::thread::hardware_concurrency();
  return h ? h : 1;
}

std::vector<double> per_op_ns(const std::vector<Clock::duration>& samples, std::size_t ops) {
  std::vector<double> v;
  v.reserve(samples.size());
  for (auto d : samples) {
    v.push_back(static_cast<double>(std::chrono::nanoseconds(d).count()) /
                static_cast<double>(ops));
  }
  return v;
}

// The tokio peer's fmt_value: 3 decimals for ms, 2 for the other units.
int decimals(std::string_view unit) { return unit == "ms" ? 3 : 2; }

// --- watchdog ---

struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  const Workload* current = nullptr;  // the workload running, or null
  std::uint64_t generation = 0;       // bumped by every start and stop
  std::optional<spool::Handle> runtime;
  std::optional<std::thread> thread;

  void loop() {
    std::unique_lock lock(mu);
    const auto limit = std::chrono::seconds(env_size("BENCH_WATCHDOG_S").value_or(300));
    for (;;) {
      cv.wait(lock, [&] { return current != nullptr; });
      const std::uint64_t gen = generation;
      if (cv.wait_for(lock, limit, [&] { return generation != gen; })) continue;
      std::fprintf(stderr,
                   "spool-bench: HANG: %s %s did not finish within %lld s "
                   "(BENCH_WATCHDOG_S); task dump of its runtime follows\n",
                   current->id, current->name, static_cast<long long>(limit.count()));
      std::fflush(stderr);
      if (runtime) {  // its first 50 lines: the task count and the first tasks
        const std::string dump = runtime->dump();
        std::size_t end = 0;
        for (int lines = 0; lines < 50 && end < dump.size(); ++lines) {
          end = std::min(dump.find('\n', end), dump.size() - 1) + 1;
        }
        std::fprintf(stderr, "%s%s", dump.substr(0, end).c_str(), end < dump.size() ? "...\n" : "");
      }
      std::fflush(stderr);
      std::_Exit(124);
    }
  }
};

Watchdog& watchdog() {
  static Watchdog* w = new Watchdog;  // never destroyed: its thread runs until exit
  return *w;
}

}  // namespace

Config config_from_env() {
  Config c;
  c.workers = std::max<std::size_t>(1, env_size("BENCH_WORKERS").value_or(online_cpus()));
  c.min_reps = std::max<std::size_t>(5, env_size("BENCH_MIN_REPS").value_or(5));
  c.max_reps = env_size("BENCH_MAX_REPS").value_or(501);
  c.budget = std::chrono::milliseconds(env_size("BENCH_BUDGET_MS").value_or(2000));
  c.timer_wheels = env_size("BENCH_TIMER_WHEELS").value_or(0);
  // 0 is passed on: Builder::build refuses it with its message.
  c.timer_resolution =
      std::chrono::microseconds(env_size("BENCH_TIMER_RESOLUTION_US").value_or(1000));
  c.task_hooks = task_hooks_from_env();
  return c;
}

spool::Runtime make_runtime(const Config& cfg, std::vector<spool::Level> levels) {
  spool::Builder builder = spool::Builder::multi_thread();
  builder.worker_threads(cfg.workers)
      .timer_wheels(cfg.timer_wheels)
      .timer_resolution(cfg.timer_resolution);
  if (!levels.empty()) builder.levels(std::move(levels)).schedule(spool::HighestFirst{});
  if (cfg.io_backend) builder.io_backend(*cfg.io_backend);
  if (cfg.task_hooks != Config::TaskHooks::kNone) {
    auto empty = [](const spool::TaskMeta&) {};
    builder.on_task_spawn(empty).on_task_terminate(empty);
    if (cfg.task_hooks == Config::TaskHooks::kAll)
      builder.on_before_task_poll(empty).on_after_task_poll(empty);
  }
  spool::Runtime rt = builder.build();
  Watchdog& w = watchdog();
  std::lock_guard lock(w.mu);
  w.runtime.emplace(rt.handle());
  return rt;
}

void check(bool ok, const std::string& what) {
  if (!ok) throw BenchFailure(what);
}

void check_in_task(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "spool-bench: FAILED inside a task: %s\n", what);
  std::fflush(stderr);
  std::_Exit(1);
}

double median(std::vector<double> v) {
  if (v.empty()) throw std::logic_error("median of no samples");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double summarize(std::string_view label, const std::vector<double>& values, std::string_view unit) {
  const double med = median(values);
  auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  const int p = decimals(unit);
  std::fprintf(stderr, "  %-40.*s reps=%-4zu median=%.*f min=%.*f max=%.*f %.*s\n",
               static_cast<int>(label.size()), label.data(), values.size(), p, med, p, *mn, p, *mx,
               static_cast<int>(unit.size()), unit.data());
  return med;
}

void result(std::string_view workload, double value, std::string_view unit) {
  std::printf("RESULT spool %.*s %.*f %.*s\n", static_cast<int>(workload.size()), workload.data(),
              decimals(unit), value, static_cast<int>(unit.size()), unit.data());
  std::fflush(stdout);
}

void report_ns_per_op(std::string_view workload, const std::vector<Clock::duration>& samples,
                      std::size_t ops_per_rep) {
  result(workload, summarize(workload, per_op_ns(samples, ops_per_rep), "ns/op"), "ns/op");
}

void info_ns_per_op(std::string_view label, const std::vector<Clock::duration>& samples,
                    std::size_t ops_per_rep) {
  summarize("info: " + std::string(label), per_op_ns(samples, ops_per_rep), "ns/op");
}

void watchdog_start(const Workload& wl) {
  Watchdog& w = watchdog();
  std::lock_guard lock(w.mu);
  if (!w.thread) {
    w.thread.emplace([&w] { w.loop(); });
    w.thread->detach();
  }
  w.current = &wl;
  w.runtime.reset();
  ++w.generation;
  w.cv.notify_all();
}

void watchdog_stop() {
  Watchdog& w = watchdog();
  std::lock_guard lock(w.mu);
  w.current = nullptr;
  w.runtime.reset();
  ++w.generation;
  w.cv.notify_all();
}

void on_each_backend(const Config& cfg, const char* name,
                     void (*run)(Config cfg, const char* name)) {
  // BENCH_IO_BACKEND=epoll or io_uring: that one only (scripts/count-rmw per backend).
  const char* only = std::getenv("BENCH_IO_BACKEND");
  const std::string_view one = only != nullptr ? only : "";
  Config on = cfg;
  if (one != "io_uring") {
    on.io_backend = spool::IoBackend::kEpoll;
    run(on, name);
  }
  if (one == "epoll") return;
  const std::string uring_name = std::string(name) + "@io_uring";
  on.io_backend = spool::IoBackend::kIoUring;
  try {
    run(on, uring_name.c_str());
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "spool-bench: %s skipped: %s\n", uring_name.c_str(), e.what());
  }
}

}  // namespace spool_bench
