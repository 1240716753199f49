// A limit on bytes shared by every connection of a server: what their input buffers may hold
// beyond their usual size, taken as a buffer grows for a large command and given back as it
// shrinks (--max-query-total).
#pragma once

#include <atomic>
#include <cstddef>

namespace mini_redis {

/// Bytes taken against a limit, by any thread. Thread-safe.
class MemoryBudget {
 public:
  /// A budget of `limit` bytes.
  explicit MemoryBudget(std::size_t limit) noexcept : limit_(limit) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  /// Takes `n` bytes if the total stays within the limit: false (and nothing taken) if not.
  bool try_take(std::size_t n) noexcept {
    std::size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (n > limit_ - used) return false;
    } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
    return true;
  }
  /// Gives back `n` bytes taken before.
  void give_back(std::size_t n) noexcept { used_.fetch_sub(n, std::memory_order_relaxed); }
  /// The bytes taken now.
  std::size_t used() const noexcept { return used_.load(std::memory_order_relaxed); }

 private:
  const std::size_t limit_;
  // Protocol: changed by try_take (CAS) and give_back (fetch_sub) on any connection's thread,
  // read by used() and by try_take's first load. Every access is relaxed: a count that
  // publishes no other data; the CAS alone keeps concurrent takes from passing the limit.
  std::atomic<std::size_t> used_{0};
};

}  // namespace mini_redis
