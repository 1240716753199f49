// Tokens: a reusable wake-up between tasks. Givers add a token and wake the taker; the one
// taking task awaits take(), which consumes a token.
#pragma once

#include <atomic>
#include <cstdint>

#include "spool/spool.hpp"

namespace spool_rt_test {

class Tokens {
 public:
  // The leaf future returned by take(): ready once it consumed a token.
  struct Take {
    Tokens* t;
    spool::Poll<void> poll(spool::Context& cx) {
      if (t->try_take()) return spool::Poll<void>::ready();
      t->waker_.register_waker(cx.waker());
      if (t->try_take()) return spool::Poll<void>::ready();
      return spool::pending;
    }
  };
  // Any thread or task.
  void give() {
    count_.fetch_add(1, std::memory_order_release);
    waker_.wake();
  }
  // The one taking task.
  Take take() { return Take{this}; }

 private:
  bool try_take() {
    std::int64_t c = count_.load(std::memory_order_acquire);
    while (c > 0) {
      if (count_.compare_exchange_weak(c, c - 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  }
  // Written by give() (release fetch_add, then wake) and by try_take() (acq_rel CAS); read by
  // try_take() (acquire load/CAS), which pairs with give()'s release. The re-check after
  // register_waker pairs with give()'s add-then-wake, so no wake-up is lost.
  std::atomic<std::int64_t> count_{0};
  spool::AtomicWaker waker_;
};

}  // namespace spool_rt_test
