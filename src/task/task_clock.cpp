#include "task/task_clock.hpp"

#include <fstream>
#include <mutex>
#include <string>
#include <utility>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace spool::detail {

namespace {

#if defined(__x86_64__)
// CPUID 8000_0007h, EDX bit 8: the TSC runs at a constant rate in every P-, C- and T-state.
bool invariant_tsc() noexcept {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) return false;
  __get_cpuid(0x80000007u, &a, &b, &c, &d);
  return (d & (1u << 8)) != 0;
}

// A constant rate is not the same counter on every core (several sockets, a firmware that
// wrote TSC_ADJUST, some hypervisors): the kernel keeps its own time with the TSC only once
// it found the cores' counters in step, so its choice is the test.
bool kernel_keeps_time_with_tsc() {
  std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  return static_cast<bool>(source >> name) && name == "tsc";
}

// A TSC reading and a CLOCK_MONOTONIC one taken together: the latter between two of the
// former, retried while they lie far apart (the thread was preempted between them).
std::pair<std::int64_t, std::int64_t> paired_read() noexcept {
  std::pair<std::int64_t, std::int64_t> best{0, 0};
  std::int64_t best_width = -1;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto before = static_cast<std::int64_t>(__rdtsc());
    const std::int64_t ns = TaskClock::monotonic_ns();
    const auto after = static_cast<std::int64_t>(__rdtsc());
    const std::int64_t width = after - before;
    if (best_width < 0 || width < best_width) {
      best = {before + width / 2, ns};
      best_width = width;
    }
    if (width < 2'000) break;  // (about 1 us at 2 GHz; a read takes tens of ns)
  }
  return best;
}
#endif

}  // namespace

void TaskClock::calibrate() {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(__x86_64__)
    if (!invariant_tsc() || !kernel_keeps_time_with_tsc()) return;
    // Both clocks over 1 ms: each end's pairing errs by well under 1 us, so the rate by
    // well under 1e-3 (typically 1e-4).
    const auto [ticks0, ns0] = paired_read();
    while (monotonic_ns() - ns0 < 1'000'000) {
    }
    const auto [ticks1, ns1] = paired_read();
    if (ticks1 <= ticks0) return;
    const double rate = static_cast<double>(ns1 - ns0) / static_cast<double>(ticks1 - ticks0);
    if (!(rate > 0.05 && rate < 10.0)) return;  // (20 GHz to 100 MHz: anything else is wrong)
    ns_per_tick_ = rate;
    use_tsc_ = true;
#endif
  });
}

}  // namespace spool::detail
