// W4 yield_many, W5 ping_pong, W6 chained_spawn: tokio's benches/rt_multi_threaded.rs
// rt_multi_{yield_many,ping_pong,chained_spawn}, in the same code shape as the tokio peer
// (shared/peers/tokio/src/main.rs).
#include <cstddef>

#include "harness.hpp"
#include "spool/runtime.hpp"
#include "spool/sync/oneshot.hpp"

namespace spool_bench {

namespace {

// --- W4 yield_many: 200 tasks x 1,000 yields; op = one yield ---

constexpr std::size_t kYieldTasks = 200;
constexpr std::size_t kYields = 1'000;

spool::Task<void> w4_task(Latch* done) {
  for (std::size_t i = 0; i < kYields; ++i) co_await spool::yield_now();
  done->count_down();
}

void w4_yield_many(const Config& cfg) {
  Latch done;
  spool::Runtime rt = make_runtime(cfg);
  auto samples = measure(cfg, [&] {
    done.arm(kYieldTasks);
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < kYieldTasks; ++i) (void)rt.spawn(w4_task(&done));
    done.wait();
    return Clock::now() - t0;
  });
  report_ns_per_op("yield_many", samples, kYieldTasks * kYields);
}

// --- W5 ping_pong: 1,000 rounds; op = one round ---

constexpr std::size_t kPings = 1'000;

struct Unit {};  // the oneshot payload (tokio sends ())

spool::Task<void> w5_peer(spool::oneshot::Receiver<Unit> rx1, spool::oneshot::Sender<Unit> tx2) {
  try {
    co_await rx1;
  } catch (const spool::oneshot::RecvError&) {
    check_in_task(false, "ping_pong: the first oneshot's sender went away without sending");
  }
  check_in_task(tx2.send(Unit{}), "ping_pong: send on the second oneshot failed");
}

spool::Task<void> w5_round(Latch* done) {
  auto [tx1, rx1] = spool::oneshot::channel<Unit>();
  auto [tx2, rx2] = spool::oneshot::channel<Unit>();
  (void)spool::spawn(w5_peer(std::move(rx1), std::move(tx2)));
  check_in_task(tx1.send(Unit{}), "ping_pong: send on the first oneshot failed");
  try {
    co_await rx2;
  } catch (const spool::oneshot::RecvError&) {
    check_in_task(false, "ping_pong: the second oneshot's sender went away without sending");
  }
  done->count_down();
}

spool::Task<void> w5_driver(Latch* done) {
  for (std::size_t i = 0; i < kPings; ++i) (void)spool::spawn(w5_round(done));
  co_return;
}

// The block_on root spawns the driver task, then blocks until all rounds are done.
spool::Task<void> w5_root(Latch* done) {
  (void)spool::spawn(w5_driver(done));
  done->wait();
  co_return;
}

void w5_ping_pong(const Config& cfg) {
  Latch done;
  spool::Runtime rt = make_runtime(cfg);
  auto samples = measure(cfg, [&] {
    done.arm(kPings);
    const auto t0 = Clock::now();
    rt.block_on(w5_root(&done));
    return Clock::now() - t0;
  });
  report_ns_per_op("ping_pong", samples, kPings);
}

// --- W6 chained_spawn: a chain of 1,000; op = one spawn ---

constexpr int kChain = 1'000;

spool::Task<void> w6_link(Latch* done, int n);

// tokio's iter(): the last link signals, every other one spawns the next.
void w6_iter(Latch* done, int n) {
  if (n == 0) {
    done->count_down();
  } else {
    (void)spool::spawn(w6_link(done, n - 1));
  }
}

spool::Task<void> w6_link(Latch* done, int n) {
  w6_iter(done, n);
  co_return;
}

spool::Task<void> w6_root(Latch* done) {
  (void)spool::spawn(w6_link(done, kChain));
  done->wait();
  co_return;
}

void w6_chained_spawn(const Config& cfg) {
  Latch done;
  spool::Runtime rt = make_runtime(cfg);
  auto samples = measure(cfg, [&] {
    done.arm(1);
    const auto t0 = Clock::now();
    rt.block_on(w6_root(&done));
    return Clock::now() - t0;
  });
  report_ns_per_op("chained_spawn", samples, static_cast<std::size_t>(kChain));
}

}  // namespace

std::vector<Workload> scheduling_workloads() {
  return {
      {"W4", "yield_many", w4_yield_many},
      {"W5", "ping_pong", w5_ping_pong},
      {"W6", "chained_spawn", w6_chained_spawn},
  };
}

}  // namespace spool_bench
