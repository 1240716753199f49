// W18 generator_sum: a spool::Generator yields the u64s 0 .. 10^6 - 1 to a loop that awaits
// gen.next() and sums them; the sum is checked; op = one value. The floor,
// generator_sum_floor: the same values summed through a plain callback loop (an indirect call
// per value, which the compiler cannot fold into a formula), so the difference is what the
// generator's resume and hand-over cost. No peer runs W18 (cppcoro is not in Debian).
#include <cstdint>
#include <vector>

#include "harness.hpp"
#include "spool/runtime.hpp"
#include "spool/stream/generator.hpp"

namespace spool_bench {

namespace {

constexpr std::uint64_t kValues = 1'000'000;
constexpr std::uint64_t kExpectedSum = kValues * (kValues - 1) / 2;

spool::Generator<std::uint64_t> w18_values() {
  for (std::uint64_t i = 0; i < kValues; ++i) co_yield i;
}

spool::Task<std::uint64_t> w18_sum() {
  auto gen = w18_values();
  std::uint64_t sum = 0;
  while (auto v = co_await gen.next()) sum += *v;
  co_return sum;
}

// The floor's producer: calls `consume(ctx, v)` for each value. The empty asm hides which
// function `consume` is: out of line alone, g++ cloned this for the one callback, inlined it
// and summed the values in closed form (the floor measured 0 ns).
[[gnu::noinline]] void w18_for_each_value(void* ctx, void (*consume)(void*, std::uint64_t)) {
  asm("" : "+r"(consume));
  for (std::uint64_t i = 0; i < kValues; ++i) consume(ctx, i);
}

std::uint64_t w18_floor_sum() {
  std::uint64_t sum = 0;
  w18_for_each_value(&sum,
                     [](void* ctx, std::uint64_t v) { *static_cast<std::uint64_t*>(ctx) += v; });
  return sum;
}

void w18_generator_sum(const Config& cfg) {
  spool::Runtime rt = make_runtime(cfg);
  auto samples = measure(cfg, [&] {
    const auto t0 = Clock::now();
    const std::uint64_t sum = rt.block_on(w18_sum());
    const auto elapsed = Clock::now() - t0;
    check(sum == kExpectedSum, "generator_sum: the generator's values summed to a wrong total");
    return elapsed;
  });
  report_ns_per_op("generator_sum", samples, kValues);

  auto floor = measure(cfg, [&] {
    const auto t0 = Clock::now();
    const std::uint64_t sum = w18_floor_sum();
    const auto elapsed = Clock::now() - t0;
    check(sum == kExpectedSum, "generator_sum_floor: the callback loop summed to a wrong total");
    return elapsed;
  });
  report_ns_per_op("generator_sum_floor", floor, kValues);
}

}  // namespace

std::vector<Workload> stream_workloads() {
  return {
      {"W18", "generator_sum", w18_generator_sum},
  };
}

}  // namespace spool_bench
