// W7 mpsc_throughput: 4 producer tasks x 100,000 u64 through one bounded spool::mpsc channel
// (capacity 1,024) to one consumer task; W14 mutex_contended: 8 tasks x 100,000 rounds of
// lock / increment / unlock on one spool::Mutex. Both in the code shape of the tokio peer
// (shared/peers/tokio/src/main.rs).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "harness.hpp"
#include "spool/runtime.hpp"
#include "spool/sync/mpsc.hpp"
#include "spool/sync/mutex.hpp"

namespace spool_bench {

namespace {

constexpr std::uint64_t kProducers = 4;
constexpr std::uint64_t kPerProducer = 100'000;
constexpr std::size_t kCapacity = 1'024;

spool::Task<void> w7_producer(spool::mpsc::Sender<std::uint64_t> tx) {
  for (std::uint64_t i = 0; i < kPerProducer; ++i) {
    check_in_task(co_await tx.send(i), "mpsc_throughput: the receiver went away");
  }
}

spool::Task<std::uint64_t> w7_consumer(spool::mpsc::Receiver<std::uint64_t> rx) {
  std::uint64_t sum = 0;
  while (std::optional<std::uint64_t> v = co_await rx.recv()) sum += *v;
  co_return sum;
}

// As the peer's block_on(async { ... }): the root makes the channel, spawns the consumer and
// the producers, drops its sender and awaits the consumer's sum.
spool::Task<std::uint64_t> w7_root() {
  auto [tx, rx] = spool::mpsc::channel<std::uint64_t>(kCapacity);
  spool::JoinHandle<std::uint64_t> consumer = spool::spawn(w7_consumer(std::move(rx)));
  for (std::uint64_t p = 0; p < kProducers; ++p) (void)spool::spawn(w7_producer(tx));
  { auto dropped = std::move(tx); }
  co_return co_await consumer;
}

void w7_mpsc_throughput(const Config& cfg) {
  constexpr std::uint64_t kExpected = kProducers * (kPerProducer * (kPerProducer - 1) / 2);
  spool::Runtime rt = make_runtime(cfg);
  auto samples = measure(cfg, [&] {
    const auto t0 = Clock::now();
    const std::uint64_t sum = rt.block_on(w7_root());
    const auto dt = Clock::now() - t0;
    check(sum == kExpected, "mpsc_throughput: wrong sum");
    return dt;
  });
  report_ns_per_op("mpsc_throughput", samples, kProducers * kPerProducer);
}

constexpr std::size_t kMutexTasks = 8;
constexpr std::size_t kMutexRounds = 100'000;

spool::Task<void> w14_task(spool::Mutex<std::uint64_t>* m, Latch* done) {
  for (std::size_t i = 0; i < kMutexRounds; ++i) ++*co_await m->lock();
  done->count_down();
}

void w14_mutex_contended(const Config& cfg) {
  Latch done;
  spool::Runtime rt = make_runtime(cfg);
  auto samples = measure(cfg, [&] {
    // A fresh mutex per repetition, as the peer's Arc<Mutex<u64>>.
    auto m = std::make_unique<spool::Mutex<std::uint64_t>>(0);
    done.arm(kMutexTasks);
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < kMutexTasks; ++i) (void)rt.spawn(w14_task(m.get(), &done));
    done.wait();
    const auto dt = Clock::now() - t0;
    const std::uint64_t total = *rt.block_on(m->lock());
    check(total == kMutexTasks * kMutexRounds, "mutex_contended: wrong total");
    return dt;
  });
  report_ns_per_op("mutex_contended", samples, kMutexTasks * kMutexRounds);
}

}  // namespace

std::vector<Workload> sync_workloads() {
  return {
      {"W7", "mpsc_throughput", w7_mpsc_throughput},
      {"W14", "mutex_contended", w14_mutex_contended},
  };
}

}  // namespace spool_bench
