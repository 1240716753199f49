// BuiltOnce<T>: a T built in place by the first thread that asks for it.
#pragma once

#include <cstdint>
#include <new>
#include <type_traits>

#include "spool/config.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::detail {

// Room for a T whose constructor (and destructor) run only if some thread asks for it:
// the first get(), from any thread, builds it; a get() racing with that build waits for it. For
// books that only a rare path needs (a join's stolen children, which thieves on several threads may
// be the first to reach). T's default constructor must be noexcept and short: others spin while it
// runs.
//
// Protocol: state_ goes kEmpty -> kBuilding (compare-exchange: the one builder) -> kBuilt
// (release store, after the constructor). get() loads it with acquire, pairing with that
// store, so every thread that sees kBuilt sees T built. Never goes back: destroyed with
// the BuiltOnce, which the caller ensures no thread uses any more.
template <class T>
class BuiltOnce {
  static_assert(std::is_nothrow_default_constructible_v<T>,
                "BuiltOnce<T>: get() is noexcept, so T's default constructor must not throw");

 public:
  BuiltOnce() noexcept {}  // value_: built by the first get()
  BuiltOnce(const BuiltOnce&) = delete;
  BuiltOnce& operator=(const BuiltOnce&) = delete;
  ~BuiltOnce() {
    // Relaxed would do for the owner that built it; acquire orders another builder's
    // constructor before this destructor without asking the caller how it synchronised.
    if (state_.load(std::memory_order_acquire) == kBuilt) destroy_value();
  }

  // The T, built now if no thread built it yet.
  T& get() noexcept {
    // Acquire: pairs with the builder's release store of kBuilt.
    if (state_.load(std::memory_order_acquire) != kBuilt) build_or_wait();
    return value_;
  }

 private:
  static constexpr std::uint8_t kEmpty = 0;
  static constexpr std::uint8_t kBuilding = 1;
  static constexpr std::uint8_t kBuilt = 2;

  [[gnu::noinline]] void build_or_wait() noexcept {
    std::uint8_t expected = kEmpty;
    // Relaxed: winning only makes this thread the builder (nothing to see yet); losing is
    // followed by the acquire loads below.
    if (state_.compare_exchange_strong(expected, kBuilding, std::memory_order_relaxed)) {
      ::new (static_cast<void*>(&value_)) T;
      // Release: publishes the constructor's writes to get()'s acquire load.
      state_.store(kBuilt, std::memory_order_release);
      return;
    }
    // Acquire: as in get().
    while (state_.load(std::memory_order_acquire) != kBuilt) spin_pause();
  }

  // Out of line: inlined, g++ 12 at -O1 (the tsan preset) cannot see the state check guard
  // it and warns that T's members may be read uninitialized (-Wmaybe-uninitialized).
  [[gnu::noinline]] void destroy_value() noexcept { value_.~T(); }

  Atomic<std::uint8_t> state_{kEmpty};
  union {
    T value_;  // built once state_ is kBuilt
  };
};

}  // namespace spool::detail
