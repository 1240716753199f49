#include "task/task_clock.hpp"

#include <mutex>

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
#endif

}  // namespace

void TaskClock::calibrate() {
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(__x86_64__)
    if (!invariant_tsc()) return;
    // Both clocks over 1 ms of spinning: a clock_gettime's 24 ns at each end err by 5e-5.
    const std::int64_t ns0 = monotonic_ns();
    const auto ticks0 = static_cast<std::int64_t>(__rdtsc());
    std::int64_t ns1 = ns0;
    while (ns1 - ns0 < 1'000'000) ns1 = monotonic_ns();
    const auto ticks1 = static_cast<std::int64_t>(__rdtsc());
    if (ticks1 <= ticks0) return;
    ns_per_tick_ = static_cast<double>(ns1 - ns0) / static_cast<double>(ticks1 - ticks0);
    use_tsc_ = true;
#endif
  });
}

}  // namespace spool::detail
