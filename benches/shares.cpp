// P2 level_shares (spool only; not in shared/bench/WORKLOADS.md, no peer has levels): how CPU
// time is shared under saturation, the promises of issue 9 that need seconds to show.
//   - RoundRobin between two levels with slices 3 ms and 1 ms, each level saturated with
//     200 x workers tasks (50 us of CPU, then yield_now): the high level's share of the busy
//     time should be 0.75. Lines: rr_share_high (fraction) and rr_share_error (% of 0.75).
//   - Two channels of one level, one flooded with ten times the other's tasks, both always
//     runnable: the small channel's share should be 0.5 (round-robin between channels, not
//     FIFO by task count). Lines: channel_share_small and channel_share_error (% of 0.5).
// Shares come from RuntimeMetrics busy_time (wall time spent polling each level's and each
// channel's tasks), as deltas over one window of BENCH_BUDGET_MS (default 2000 ms) after a
// 200 ms warm-up.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "spool/runtime.hpp"

namespace spool_bench {

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr std::size_t kPerWorker = 200;
constexpr microseconds kChunk{50};
constexpr milliseconds kWarmup{200};

// Spins `kChunk` on the steady clock, then yields, until `stop` is set (release by the
// measuring thread; read with acquire here).
spool::Task<void> spin_loop(const std::atomic<bool>* stop, Latch* done) {
  while (!stop->load(std::memory_order_acquire)) {
    const auto until = Clock::now() + kChunk;
    while (Clock::now() < until) {
    }
    co_await spool::yield_now();
  }
  done->count_down();
}

// Busy time per channel over one window, with `spawn` having filled the runtime.
std::vector<double> window_busy_ms(const Config& cfg, spool::Runtime& rt) {
  std::this_thread::sleep_for(kWarmup);  // the benchmark's own pacing, not synchronisation
  const spool::RuntimeMetrics before = rt.metrics();
  std::this_thread::sleep_for(cfg.budget);
  const spool::RuntimeMetrics after = rt.metrics();
  std::vector<double> busy;
  for (std::size_t c = 0; c < after.channels.size(); ++c) {
    busy.push_back(std::chrono::duration<double, std::milli>(after.channels[c].busy_time -
                                                             before.channels[c].busy_time)
                       .count());
  }
  return busy;
}

// Spawns `n` spinning tasks on `channel`, counted by `done`.
void spawn_spinners(spool::Runtime& rt, spool::ChannelId channel, std::size_t n,
                    const std::atomic<bool>* stop, Latch* done) {
  for (std::size_t i = 0; i < n; ++i) (void)rt.spawn_on(channel, spin_loop(stop, done));
}

void p2_level_shares(const Config& cfg) {
  const std::size_t n = kPerWorker * cfg.workers;
  Latch done;
  {
    // RoundRobin 3:1.
    std::atomic<bool> stop{false};
    done.arm(static_cast<std::int64_t>(2 * n));
    auto rt = spool::Builder::multi_thread()
                  .worker_threads(cfg.workers)
                  .levels({spool::Level{"high"}, spool::Level{"low"}})
                  .schedule(spool::RoundRobin{{milliseconds(3), milliseconds(1)}})
                  .build();
    spawn_spinners(rt, rt.channel("high"), n, &stop, &done);
    spawn_spinners(rt, rt.channel("low"), n, &stop, &done);
    const std::vector<double> busy = window_busy_ms(cfg, rt);
    stop.store(true, std::memory_order_release);
    done.wait();
    const double share = busy[0] / (busy[0] + busy[1]);
    result("rr_share_high", share, "fraction");
    result("rr_share_error", std::abs(share - 0.75) / 0.75 * 100, "%");
  }
  {
    // Two channels of one level: "flood" has ten times the tasks of "small".
    std::atomic<bool> stop{false};
    done.arm(static_cast<std::int64_t>(11 * n));
    auto rt = spool::Builder::multi_thread()
                  .worker_threads(cfg.workers)
                  .levels({spool::Level{"flood", "small"}})
                  .build();
    spawn_spinners(rt, rt.channel("flood"), 10 * n, &stop, &done);
    spawn_spinners(rt, rt.channel("small"), n, &stop, &done);
    const std::vector<double> busy = window_busy_ms(cfg, rt);
    stop.store(true, std::memory_order_release);
    done.wait();
    const double share = busy[1] / (busy[0] + busy[1]);
    result("channel_share_small", share, "fraction");
    result("channel_share_error", std::abs(share - 0.5) / 0.5 * 100, "%");
  }
}

}  // namespace

std::vector<Workload> shares_workloads() {
  return {
      {"P2", "level_shares", p2_level_shares},
  };
}

}  // namespace spool_bench
