// The one atomics shim of spool's lock-free core: Atomic<T> and Mutex.
//
// Normal builds: plain aliases of std::atomic<T> and std::mutex (no wrapper, no cost).
// Model-checking builds (SPOOL_MODEL_CHECK defined before the first inclusion; only the
// Relacy tests in tests/model/ do that): Relacy's rl::atomic<T> and rl::mutex behind the
// same member functions, so that Relacy explores the interleavings and the weak-memory
// behaviours of the real code.
#pragma once

#include <sched.h>

#include <atomic>
#include <mutex>

#include "spool/config.hpp"

#ifdef SPOOL_MODEL_CHECK
#include <memory>

// Relacy's own headers: the list relacy/relacy.hpp includes, without its macro section,
// which renames new, delete, malloc, assert and memory_order_* (clashing with the standard
// library). Code under test keeps the std:: names; this header translates them.
// In relacy.hpp's order:
// clang-format off
#include <relacy/base.hpp>
#include <relacy/context.hpp>
#include <relacy/context_base_impl.hpp>
#include <relacy/backoff.hpp>
#include <relacy/atomic_fence.hpp>
#include <relacy/atomic.hpp>
#include <relacy/var.hpp>
#include <relacy/thread_local.hpp>
#include <relacy/test_suite.hpp>
#include <relacy/dyn_thread.hpp>
#include <relacy/stdlib/mutex.hpp>
#include <relacy/stdlib/condition_variable.hpp>
#include <relacy/stdlib/semaphore.hpp>
#include <relacy/stdlib/event.hpp>
// clang-format on
#endif

namespace spool::detail {

/// One turn of a loop that spins on another core's store for a short while: tells the CPU
/// (x86 `pause`, AArch64 `yield`; nothing elsewhere), which then neither floods the memory
/// pipeline nor mispredicts the loop's exit. Not a yield to other threads (nor, under the
/// model checker, a scheduling point): a spin loop also calls spin_pause or sched_yield.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

#ifndef SPOOL_MODEL_CHECK

/// The atomic type of the lock-free core: std::atomic<T> itself. Same thread-safety as
/// std::atomic; every use states its protocol (writer, ordering, paired read) beside it.
template <class T>
using Atomic = std::atomic<T>;

/// The mutex of the core's lock-protected parts (Idle): std::mutex itself.
using Mutex = std::mutex;

/// One turn of a loop that waits for another thread's store: gives the CPU away, in case
/// that thread was preempted.
inline void spin_pause() noexcept { sched_yield(); }

// Asymmetric fences: a pair that orders like two seq_cst fences, one of them nearly free.
// asymmetric_fence_light() is a compiler barrier; asymmetric_fence_heavy() makes every
// running thread of the process execute a full barrier (Linux membarrier, private
// expedited), so that a light fence of another thread acts as a full one against it. For a
// Dekker-style protocol whose one side runs constantly and the other rarely (a fork deque's
// owner pops, a thief steals). Only once enable_asymmetric_fences() returned true; without
// it, use seq_cst fences or accesses on both sides.

/// Registers the process for asymmetric_fence_heavy(), once per process (later calls give
/// the first one's answer); false when the system offers no such barrier (not Linux, or a
/// kernel or sandbox without membarrier's private expedited command).
SPOOL_API bool enable_asymmetric_fences() noexcept;
/// The rare side of the pair: a system call that interrupts the process's running threads.
/// False when the system refused it (no memory for the kernel's CPU mask): then no thread
/// was fenced, and the caller may rely on no ordering (a thief takes nothing).
[[nodiscard]] SPOOL_API bool asymmetric_fence_heavy() noexcept;
/// The frequent side of the pair: stops the compiler, not the processor, from reordering.
inline void asymmetric_fence_light() noexcept {
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

#else  // SPOOL_MODEL_CHECK

/// Where a model-checked operation was called from (Relacy's debug info, the `$` of its
/// examples), taken at the call site so that Relacy's traces name spool's lines.
struct ModelSite {
  /// The call site of the function whose default argument this is.
  static rl::debug_info here(const char* func = __builtin_FUNCTION(),
                             const char* file = __builtin_FILE(),
                             unsigned line = __builtin_LINE()) noexcept {
    return rl::debug_info(func, file, line);
  }
};

/// std::memory_order → Relacy's memory_order.
constexpr rl::memory_order to_rl(std::memory_order mo) noexcept {
  switch (mo) {
    case std::memory_order_relaxed:
      return rl::mo_relaxed;
    case std::memory_order_consume:
      return rl::mo_consume;
    case std::memory_order_acquire:
      return rl::mo_acquire;
    case std::memory_order_release:
      return rl::mo_release;
    case std::memory_order_acq_rel:
      return rl::mo_acq_rel;
    case std::memory_order_seq_cst:
      break;
  }
  return rl::mo_seq_cst;
}

/// The failure ordering std::atomic derives from a single CAS ordering.
constexpr std::memory_order cas_failure_order(std::memory_order mo) noexcept {
  if (mo == std::memory_order_acq_rel) return std::memory_order_acquire;
  if (mo == std::memory_order_release) return std::memory_order_relaxed;
  return mo;
}

/// Model-checking Atomic<T>: std::atomic's member functions over a Relacy rl::atomic<T>.
/// Pointer-sized (the rl::atomic lives on the heap) so that structures embedding it keep
/// their size checks. Must be constructed inside a Relacy simulation.
template <class T>
class Atomic {
 public:
  /// Value-initialised, as std::atomic<T> is since C++20.
  Atomic() : Atomic(T{}) {}
  /// Initialised to `v` (not an atomic operation, as for std::atomic).
  Atomic(T v) : a_(std::make_unique<rl::atomic<T> >(v)) {}  // NOLINT: implicit like std::atomic
  Atomic(const Atomic&) = delete;
  Atomic& operator=(const Atomic&) = delete;

  /// std::atomic<T>::load.
  T load(std::memory_order mo = std::memory_order_seq_cst,
         rl::debug_info at = ModelSite::here()) const {
    return (*a_)(at).load(to_rl(mo));
  }
  /// std::atomic<T>::store.
  void store(T v, std::memory_order mo = std::memory_order_seq_cst,
             rl::debug_info at = ModelSite::here()) {
    (*a_)(at).store(v, to_rl(mo));
  }
  /// std::atomic<T>::exchange.
  T exchange(T v, std::memory_order mo = std::memory_order_seq_cst,
             rl::debug_info at = ModelSite::here()) {
    return (*a_)(at).exchange(v, to_rl(mo));
  }
  /// std::atomic<T>::compare_exchange_weak (may fail spuriously, as Relacy models).
  bool compare_exchange_weak(T& expected, T desired, std::memory_order success,
                             std::memory_order failure, rl::debug_info at = ModelSite::here()) {
    return (*a_)(at).compare_exchange_weak(expected, desired, to_rl(success), to_rl(failure));
  }
  /// std::atomic<T>::compare_exchange_weak with one ordering.
  bool compare_exchange_weak(T& expected, T desired,
                             std::memory_order mo = std::memory_order_seq_cst,
                             rl::debug_info at = ModelSite::here()) {
    return compare_exchange_weak(expected, desired, mo, cas_failure_order(mo), at);
  }
  /// std::atomic<T>::compare_exchange_strong.
  bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                               std::memory_order failure, rl::debug_info at = ModelSite::here()) {
    return (*a_)(at).compare_exchange_strong(expected, desired, to_rl(success), to_rl(failure));
  }
  /// std::atomic<T>::compare_exchange_strong with one ordering.
  bool compare_exchange_strong(T& expected, T desired,
                               std::memory_order mo = std::memory_order_seq_cst,
                               rl::debug_info at = ModelSite::here()) {
    return compare_exchange_strong(expected, desired, mo, cas_failure_order(mo), at);
  }
  /// std::atomic<T>::fetch_add.
  T fetch_add(T v, std::memory_order mo = std::memory_order_seq_cst,
              rl::debug_info at = ModelSite::here()) {
    return (*a_)(at).fetch_add(v, to_rl(mo));
  }
  /// std::atomic<T>::fetch_sub.
  T fetch_sub(T v, std::memory_order mo = std::memory_order_seq_cst,
              rl::debug_info at = ModelSite::here()) {
    return (*a_)(at).fetch_sub(v, to_rl(mo));
  }
  /// std::atomic<T>::fetch_and.
  T fetch_and(T v, std::memory_order mo = std::memory_order_seq_cst,
              rl::debug_info at = ModelSite::here()) {
    return (*a_)(at).fetch_and(v, to_rl(mo));
  }
  /// std::atomic<T>::fetch_or.
  T fetch_or(T v, std::memory_order mo = std::memory_order_seq_cst,
             rl::debug_info at = ModelSite::here()) {
    return (*a_)(at).fetch_or(v, to_rl(mo));
  }
  /// std::atomic<T>::fetch_xor.
  T fetch_xor(T v, std::memory_order mo = std::memory_order_seq_cst,
              rl::debug_info at = ModelSite::here()) {
    return (*a_)(at).fetch_xor(v, to_rl(mo));
  }

 private:
  std::unique_ptr<rl::atomic<T> > a_;
};

/// Model-checking Mutex: Relacy's rl::mutex behind std::mutex's member functions (so that
/// std::lock_guard and std::unique_lock work). Must be constructed inside a simulation.
class Mutex {
 public:
  /// std::mutex::lock.
  void lock(rl::debug_info at = ModelSite::here()) { m_->lock(at); }
  /// std::mutex::try_lock.
  bool try_lock(rl::debug_info at = ModelSite::here()) { return m_->try_lock(at); }
  /// std::mutex::unlock.
  void unlock(rl::debug_info at = ModelSite::here()) { m_->unlock(at); }

 private:
  std::unique_ptr<rl::mutex> m_ = std::make_unique<rl::mutex>();
};

/// Model-checking spin_pause: lets Relacy run the other threads (a spin loop without it
/// looks like a livelock to the checker).
inline void spin_pause(rl::debug_info at = ModelSite::here()) { rl::yield(1, at); }

/// Model-checking asymmetric fences: Relacy has no membarrier, so both sides are seq_cst
/// fences. That is the pair's guarantee (each light fence orders against each heavy one as
/// two seq_cst fences would); a model must therefore never pair two light fences. The heavy
/// one is refused (no fence, false) in some runs, as the system may refuse it.
[[nodiscard]] inline bool asymmetric_fence_heavy(rl::debug_info at = ModelSite::here()) {
  if (rl::rand(4) == 0) return false;
  rl::atomic_thread_fence(rl::mo_seq_cst, at);
  return true;
}
/// See asymmetric_fence_heavy.
inline void asymmetric_fence_light(rl::debug_info at = ModelSite::here()) {
  rl::atomic_thread_fence(rl::mo_seq_cst, at);
}

#endif  // SPOOL_MODEL_CHECK

}  // namespace spool::detail
