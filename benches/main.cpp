// spool-bench: spool's side of the cross-runtime benchmark (shared/bench/WORKLOADS.md).
//
// Usage: spool-bench [--list] [--help] [WORKLOAD ...]
//   WORKLOAD is an id (W4, w4) or a name (yield_many); comma-separated lists and
//   --only=W1,W2 (the Asio and TBB peers' syntax) are accepted too. No workload: all
//   implemented ones, in id order. --list prints "<id> <name>" per implemented workload.
// Environment: BENCH_WORKERS, BENCH_MIN_REPS, BENCH_BUDGET_MS, BENCH_MAX_REPS (as the tokio
// peer; see harness.hpp), BENCH_WATCHDOG_S (hang detection per workload, default 300), and
// spool's own settings BENCH_TIMER_WHEELS, BENCH_TIMER_RESOLUTION_US and BENCH_IO_BACKEND
// (harness.hpp).
// stdout: only `RESULT spool <workload> <value> <unit>` lines (and --list's listing).
// Exit status: 0; 1 when a workload failed (wrong result, or an exception escaped); 2 on
// a bad argument; 124 when a workload hung (see BENCH_WATCHDOG_S).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "harness.hpp"

namespace {

using spool_bench::Workload;

std::vector<Workload> all_workloads() {
  std::vector<Workload> all;
  for (auto group :
       {spool_bench::spawn_workloads, spool_bench::scheduling_workloads,
        spool_bench::timer_workloads, spool_bench::fork_join_workloads, spool_bench::sync_workloads,
        spool_bench::net_workloads, spool_bench::framed_lines_workloads,
        spool_bench::file_workloads, spool_bench::process_workloads, spool_bench::tls_workloads,
        spool_bench::stream_workloads, spool_bench::priority_workloads,
        spool_bench::shares_workloads}) {
    for (const Workload& w : group()) all.push_back(w);
  }
  return all;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool matches(std::string_view arg, const char* id, const char* name) {
  return iequals(arg, id) || arg == name;
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: spool-bench [--list] [WORKLOAD ...]\n"
               "  WORKLOAD: an id (W1) or a name (spawn_many_local); lists as W1,W2 or "
               "--only=W1,W2\n"
               "  no WORKLOAD: every implemented workload (see --list)\n"
               "  env: BENCH_WORKERS BENCH_MIN_REPS BENCH_BUDGET_MS BENCH_MAX_REPS "
               "BENCH_WATCHDOG_S\n"
               "       BENCH_TIMER_WHEELS BENCH_TIMER_RESOLUTION_US BENCH_IO_BACKEND (spool's "
               "own settings)\n");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Workload> workloads = all_workloads();

  std::vector<std::string> wanted;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--list") {
      for (const Workload& w : workloads) std::printf("%s %s\n", w.id, w.name);
      return 0;
    }
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (a.starts_with("--only=")) {
      a.remove_prefix(7);
    } else if (a.starts_with("-")) {
      std::fprintf(stderr, "spool-bench: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
    while (!a.empty()) {  // comma-separated
      const std::size_t comma = std::min(a.find(','), a.size());
      if (comma > 0) wanted.emplace_back(a.substr(0, comma));
      a.remove_prefix(std::min(comma + 1, a.size()));
    }
  }

  for (const std::string& a : wanted) {
    if (std::any_of(workloads.begin(), workloads.end(),
                    [&](const Workload& w) { return matches(a, w.id, w.name); })) {
      continue;
    }
    std::fprintf(stderr, "spool-bench: unknown workload '%s' (see --list)\n", a.c_str());
    return 2;
  }

  spool_bench::Config cfg;
  try {
    cfg = spool_bench::config_from_env();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spool-bench: %s\n", e.what());
    return 2;
  }
  std::fprintf(stderr, "spool-bench: workers=%zu min_reps=%zu budget=%lldms max_reps=%zu\n",
               cfg.workers, cfg.min_reps, static_cast<long long>(cfg.budget.count()), cfg.max_reps);

  int failures = 0;
  for (const Workload& w : workloads) {
    if (!wanted.empty() && std::none_of(wanted.begin(), wanted.end(), [&](const std::string& a) {
          return matches(a, w.id, w.name);
        })) {
      continue;
    }
    std::fprintf(stderr, "%s %s\n", w.id, w.name);
    const auto t0 = std::chrono::steady_clock::now();
    spool_bench::watchdog_start(w);
    try {
      w.run(cfg);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "spool-bench: FAILED %s %s: %s\n", w.id, w.name, e.what());
      ++failures;
    } catch (...) {
      std::fprintf(stderr, "spool-bench: FAILED %s %s: unknown exception\n", w.id, w.name);
      ++failures;
    }
    spool_bench::watchdog_stop();
    std::fprintf(stderr, "  (%.1f s)\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (failures > 0) {
    std::fprintf(stderr, "spool-bench: %d workload(s) failed\n", failures);
    return 1;
  }
  return 0;
}
