// Which sanitizer this test binary is built with, to scale stress tests.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define SPOOL_RT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SPOOL_RT_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SPOOL_RT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPOOL_RT_ASAN 1
#endif
#endif

namespace spool_rt_test {

#ifdef SPOOL_RT_TSAN
inline constexpr bool kUnderTsan = true;
#else
inline constexpr bool kUnderTsan = false;
#endif
#ifdef SPOOL_RT_ASAN
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif

/// `normal` in default/release builds, `tsan` under ThreadSanitizer (which runs this kind
/// of code 5-15x slower and serialises it on a small machine).
constexpr long scaled(long normal, long tsan) { return kUnderTsan ? tsan : normal; }

/// `normal` without a sanitizer, `sanitized` under ASan or TSan: for the longest stress tests,
/// which CI runs under both.
constexpr long scaled_for_sanitizers(long normal, long sanitized) {
  return kUnderTsan || kUnderAsan ? sanitized : normal;
}

}  // namespace spool_rt_test
