// W8 timer_churn and W9 sleep_storm: the timer workloads of shared/bench/WORKLOADS.md, in the
// same code shape as the tokio peer (shared/peers/tokio/src/main.rs: armed_timeout,
// w8_timer_churn, w9_sleep_storm; SplitMix64 is in splitmix64.hpp). In both, the tasks are
// spawned by one task running on a worker, and the last one to finish signals the measuring
// thread (Latch).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "splitmix64.hpp"
#include "spool/runtime.hpp"
#include "spool/time.hpp"

namespace spool_bench {

namespace {

// --- W8 timer_churn: 100,000 tasks each arm a 1 s timer and cancel it; op = one timer ---

constexpr std::size_t kTimers = 100'000;
constexpr std::chrono::seconds kChurnTimeout{1};

// tokio's `async move { v }`: ready with `v` at its first poll.
struct ReadyValue {
  std::uint64_t v;
  spool::Poll<std::uint64_t> poll(spool::Context&) { return v; }
};

// tokio peer's armed_timeout: a timeout whose Sleep is polled before the inner future, so
// that the timer is registered with the time driver even though the inner future is ready
// at once; destroying the ArmedTimeout then unregisters (cancels) it. spool::timeout polls
// the inner future first and arms lazily (as tokio::time::timeout), so around a ready
// future it never arms: that is the informational figure. Empty result: the timer fired.
template <spool::Future F>
class ArmedTimeout {
 public:
  using Output = spool::future_output_t<F>;

  ArmedTimeout(std::chrono::nanoseconds d, F inner)
      : sleep_(spool::sleep(d)), inner_(std::move(inner)) {}

  spool::Poll<std::optional<Output>> poll(spool::Context& cx) {
    if (sleep_.poll(cx).is_ready()) return spool::Poll<std::optional<Output>>::ready();
    auto p = inner_.poll(cx);
    if (p.is_pending()) return spool::pending;
    return spool::Poll<std::optional<Output>>::ready(std::move(p).value());
  }

 private:
  spool::Sleep sleep_;
  F inner_;
};

spool::Task<void> w8_task(Latch* done, std::uint64_t v, bool armed) {
  std::optional<std::uint64_t> r;
  if (armed) {
    r = co_await ArmedTimeout(kChurnTimeout, ReadyValue{v});  // its Sleep is cancelled at the `;`
  } else {
    auto t = co_await spool::timeout(kChurnTimeout, ReadyValue{v});
    if (t) r = t.value();
  }
  check_in_task(r == v, "timer_churn: the 1 s timeout fired");
  done->count_down();
}

spool::Task<void> w8_spawner(Latch* done, bool armed) {
  for (std::uint64_t i = 0; i < kTimers; ++i) (void)spool::spawn(w8_task(done, i, armed));
  co_return;
}

Clock::duration w8_once(spool::Runtime& rt, Latch& done, bool armed) {
  done.arm(kTimers);
  const auto t0 = Clock::now();
  (void)rt.spawn(w8_spawner(&done, armed));
  done.wait();
  return Clock::now() - t0;
}

// The proof that the timers were really registered: the runtime's cumulative counters must
// have grown by exactly `expected` arms and as many cancels since `before` (a timeout that
// never reached the driver, or one that fired, fails the workload).
void check_timer_counts(const spool::Runtime& rt, const spool::RuntimeMetrics& before,
                        std::uint64_t expected, const char* what) {
  const spool::RuntimeMetrics after = rt.metrics();
  const std::uint64_t armed = after.timers_armed - before.timers_armed;
  const std::uint64_t cancelled = after.timers_cancelled - before.timers_cancelled;
  const std::uint64_t fired = after.timers_fired - before.timers_fired;
  std::fprintf(stderr, "  %s: timers armed %llu, cancelled %llu, fired %llu (expected %llu)\n",
               what, static_cast<unsigned long long>(armed),
               static_cast<unsigned long long>(cancelled), static_cast<unsigned long long>(fired),
               static_cast<unsigned long long>(expected));
  check(armed == expected && cancelled == expected,
        std::string("timer_churn: ") + what + ": timers armed " + std::to_string(armed) +
            ", cancelled " + std::to_string(cancelled) + ", expected " + std::to_string(expected) +
            " of each");
}

void w8_timer_churn(const Config& cfg) {
  Latch done;  // outlives the runtime (declared first)
  spool::Runtime rt = make_runtime(cfg);

  spool::RuntimeMetrics before = rt.metrics();
  auto samples = measure(cfg, [&] { return w8_once(rt, done, true); });
  // + 1: measure's warm-up repetition arms and cancels its timers too.
  check_timer_counts(rt, before, (samples.size() + 1) * kTimers, "armed timeout");
  report_ns_per_op("timer_churn", samples, kTimers);

  before = rt.metrics();
  samples = measure(cfg, [&] { return w8_once(rt, done, false); });
  check_timer_counts(rt, before, 0, "plain spool::timeout");
  info_ns_per_op("timer_churn [plain spool::timeout, never armed]", samples, kTimers);
}

// --- W9 sleep_storm: 10,000 tasks each sleep 1..10 ms; wall time and p99 lateness ---

constexpr std::size_t kSleepers = 10'000;

// The durations of the 10,000 sleeps: 1 + x % 10 ms for the outputs x of a generator seeded
// with 42, so every call gives the same sequence; checked against the values WORKLOADS.md
// and the tokio peer give, so that every runtime sleeps the same durations.
std::vector<std::chrono::milliseconds> sleep_storm_durations() {
  SplitMix64 g{42};
  std::vector<std::chrono::milliseconds> d(kSleepers);
  for (auto& x : d) x = std::chrono::milliseconds(1 + g.next() % 10);
  const std::int64_t first[] = {4, 2, 9, 5, 1, 3, 6, 9, 6, 5};
  const bool first_ok = std::equal(std::begin(first), std::end(first), d.begin(),
                                   [](std::int64_t a, auto b) { return a == b.count(); });
  const auto sum = std::accumulate(d.begin(), d.end(), std::chrono::milliseconds(0));
  check(first_ok && sum.count() == 55'234,
        "sleep_storm: the splitmix64 durations differ from the check values (sum " +
            std::to_string(sum.count()) + " ms, expected 55234)");
  return d;
}

// Deadline = the instant the task starts its sleep + its duration; lateness = the instant it
// resumes - deadline (negative if it resumed early), both on spool's clock (the steady clock:
// the runtime's clock is not paused). `start` receives the instant the sleep began.
spool::Task<void> w9_sleeper(Latch* done, std::chrono::milliseconds d, std::int64_t* late_ns,
                             spool::Instant* start) {
  *start = spool::time::now();
  const spool::Instant deadline = *start + d;
  co_await spool::sleep_until(deadline);
  *late_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(spool::time::now() - deadline).count();
  done->count_down();
}

// Spawns the sleepers in sequence order; task i writes its lateness to late_ns[i] and the
// instant it began to sleep to start[i].
spool::Task<void> w9_spawner(Latch* done, const std::vector<std::chrono::milliseconds>* durs,
                             std::int64_t* late_ns, spool::Instant* start) {
  for (std::size_t i = 0; i < durs->size(); ++i) {
    (void)spool::spawn(w9_sleeper(done, (*durs)[i], &late_ns[i], &start[i]));
  }
  co_return;
}

// What one repetition measured: its wall time, the lateness percentiles (ns), and when the
// last sleeper began its sleep (after the start of the wall time): the part of the wall
// time that spawning and first polls take, before any sleep can end.
struct StormRep {
  Clock::duration wall;
  std::int64_t p50, p99, max;
  Clock::duration last_start;
};

void w9_sleep_storm(const Config& cfg) {
  Latch done;  // outlives the runtime (declared first), as the vectors the tasks use
  std::vector<std::chrono::milliseconds> durs;
  std::vector<std::int64_t> late_ns(kSleepers);
  std::vector<spool::Instant> start(kSleepers);
  spool::Runtime rt = make_runtime(cfg);

  auto samples = measure(cfg, [&] {
    durs = sleep_storm_durations();  // re-seeded: the same sequence every repetition
    done.arm(kSleepers);
    const auto t0 = Clock::now();
    (void)rt.spawn(w9_spawner(&done, &durs, late_ns.data(), start.data()));
    done.wait();
    const auto wall = Clock::now() - t0;

    std::vector<std::int64_t> sorted = late_ns;
    std::sort(sorted.begin(), sorted.end());
    // nearest rank: element ceil(q% × n) (1-based) of the sorted lateness
    const auto pct = [&](std::size_t q) { return sorted[(kSleepers * q + 99) / 100 - 1]; };
    const auto last_start = *std::max_element(start.begin(), start.end()) - t0;
    return StormRep{wall, pct(50), pct(99), sorted.back(), last_start};
  });

  std::vector<double> wall_ms, p50_us, p99_us, max_us, last_start_ms;
  for (const StormRep& s : samples) {
    wall_ms.push_back(std::chrono::duration<double, std::milli>(s.wall).count());
    p50_us.push_back(static_cast<double>(s.p50) / 1e3);
    p99_us.push_back(static_cast<double>(s.p99) / 1e3);
    max_us.push_back(static_cast<double>(s.max) / 1e3);
    last_start_ms.push_back(std::chrono::duration<double, std::milli>(s.last_start).count());
  }
  const double wall = summarize("sleep_storm (total wall time)", wall_ms, "ms");
  const double p99 = summarize("sleep_storm (p99 lateness)", p99_us, "us");
  summarize("info: sleep_storm (p50 lateness)", p50_us, "us");
  summarize("info: sleep_storm (max lateness)", max_us, "us");
  summarize("info: sleep_storm (last sleep began)", last_start_ms, "ms");
  result("sleep_storm_wall", wall, "ms");
  result("sleep_storm_p99_late", p99, "us");
}

}  // namespace

std::vector<Workload> timer_workloads() {
  return {
      {"W8", "timer_churn", w8_timer_churn},
      {"W9", "sleep_storm", w9_sleep_storm},
  };
}

}  // namespace spool_bench
