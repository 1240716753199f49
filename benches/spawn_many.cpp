// W1 spawn_many_local, W2 spawn_many_remote_idle, W3 spawn_many_remote_busy: tokio's
// benches/rt_multi_threaded.rs rt_multi_spawn_many_{local,remote_idle,remote_busy1}, in
// the same code shape as the tokio peer (shared/peers/tokio/src/main.rs).
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <vector>

#include "harness.hpp"
#include "spool/runtime.hpp"

namespace spool_bench {

namespace {

constexpr std::size_t kNumSpawn = 10'000;
constexpr auto kStall = std::chrono::microseconds(10);

// tokio's stall(): burns ~10 us of CPU on the current worker, calling sched_yield() in a
// loop (std::thread::yield_now in Rust) until 10 us have passed.
void stall() {
  const auto start = Clock::now();
  while (Clock::now() - start < kStall) sched_yield();
}

// --- W1 ---

spool::Task<void> w1_child(Latch* done) {
  done->count_down();
  co_return;
}

// The block_on root: spawns the 10,000 tasks from the calling (non-worker) thread, then
// blocks that thread until the last one signals (tokio: rx.recv() inside block_on).
spool::Task<void> w1_root(Latch* done) {
  for (std::size_t i = 0; i < kNumSpawn; ++i) (void)spool::spawn(w1_child(done));
  done->wait();
  co_return;
}

// Informational variant: the spawner is a task on a worker thread.
spool::Task<void> w1_spawner(Latch* done) {
  for (std::size_t i = 0; i < kNumSpawn; ++i) (void)spool::spawn(w1_child(done));
  co_return;
}

void w1_spawn_many_local(const Config& cfg) {
  Latch done;  // outlives the runtime (declared first)
  spool::Runtime rt = make_runtime(cfg);

  auto samples = measure(cfg, [&] {
    done.arm(kNumSpawn);
    const auto t0 = Clock::now();
    rt.block_on(w1_root(&done));
    return Clock::now() - t0;
  });
  report_ns_per_op("spawn_many_local", samples, kNumSpawn);

  samples = measure(cfg, [&] {
    done.arm(kNumSpawn);
    const auto t0 = Clock::now();
    (void)rt.spawn(w1_spawner(&done));
    done.wait();
    return Clock::now() - t0;
  });
  info_ns_per_op("spawn_many_local [spawner on a worker]", samples, kNumSpawn);
}

// --- W2, W3 ---

spool::Task<void> empty_task() { co_return; }

spool::Task<void> await_all(std::vector<spool::JoinHandle<void>>* handles) {
  for (auto& h : *handles) co_await h;
  handles->clear();
}

// One repetition: from this (outside) thread, spawn 10,000 empty tasks, then await all
// their join handles in order (tokio: rt.block_on of a loop awaiting each handle).
Clock::duration spawn_many_remote_once(spool::Runtime& rt,
                                       std::vector<spool::JoinHandle<void>>& handles) {
  const auto t0 = Clock::now();
  for (std::size_t i = 0; i < kNumSpawn; ++i) handles.push_back(rt.spawn(empty_task()));
  rt.block_on(await_all(&handles));
  return Clock::now() - t0;
}

void w2_spawn_many_remote_idle(const Config& cfg) {
  spool::Runtime rt = make_runtime(cfg);
  std::vector<spool::JoinHandle<void>> handles;
  handles.reserve(kNumSpawn);
  auto samples = measure(cfg, [&] { return spawn_many_remote_once(rt, handles); });
  report_ns_per_op("spawn_many_remote_idle", samples, kNumSpawn);
}

spool::Task<void> w3_background(const std::atomic<bool>* keep_going) {
  while (keep_going->load(std::memory_order_relaxed)) {
    co_await spool::yield_now();
    stall();
  }
}

void w3_spawn_many_remote_busy(const Config& cfg) {
  std::atomic<bool> keep_going{true};  // outlives the runtime (declared first)
  spool::Runtime rt = make_runtime(cfg);
  std::vector<spool::JoinHandle<void>> handles;
  handles.reserve(kNumSpawn);

  for (std::size_t i = 0; i < 2 * cfg.workers; ++i) (void)rt.spawn(w3_background(&keep_going));

  auto samples = measure(cfg, [&] { return spawn_many_remote_once(rt, handles); });

  keep_going.store(false, std::memory_order_relaxed);
  report_ns_per_op("spawn_many_remote_busy", samples, kNumSpawn);
}

}  // namespace

std::vector<Workload> spawn_workloads() {
  return {
      {"W1", "spawn_many_local", w1_spawn_many_local},
      {"W2", "spawn_many_remote_idle", w2_spawn_many_remote_idle},
      {"W3", "spawn_many_remote_busy", w3_spawn_many_remote_busy},
  };
}

}  // namespace spool_bench
