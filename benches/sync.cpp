// W14 mutex_contended: 8 tasks x 100,000 rounds of lock / increment / unlock on one
// spool::Mutex, in the code shape of the tokio peer (shared/peers/tokio/src/main.rs).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "harness.hpp"
#include "spool/runtime.hpp"
#include "spool/sync/mutex.hpp"

namespace spool_bench {

namespace {

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
      {"W14", "mutex_contended", w14_mutex_contended},
  };
}

}  // namespace spool_bench
