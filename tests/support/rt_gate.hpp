// Blocking synchronisation helpers for runtime tests (no sleeps anywhere).
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <latch>
#include <memory>

#include "support/sync.hpp"

namespace spool_rt_test {

/// A one-time gate that threads block on until it is opened (a std::latch of one).
/// open() may be called more than once, from any thread.
class Gate {
 public:
  void open() {
    if (!opened_.exchange(true)) latch_.count_down();
  }
  void wait() const { latch_.wait(); }
  bool is_open() const { return opened_.load(); }

 private:
  // Written by open() (seq_cst exchange: only the first opener counts the latch down); read by
  // is_open() (seq_cst load), which pairs with that exchange. wait() relies on latch_ instead,
  // whose count_down/wait give release/acquire.
  std::atomic<bool> opened_{false};
  mutable std::latch latch_{1};
};

/// Blocks until `counter` reaches at least `n`. The counter's writers must call
/// notify_all() after each change.
template <class T>
void wait_at_least(const std::atomic<T>& counter, T n) {
  for (;;) {
    T seen = counter.load();
    if (seen >= n) return;
    counter.wait(seen);
  }
}

/// Increments `counter` and wakes its waiters (the writer side of wait_at_least).
template <class T>
void bump(std::atomic<T>& counter) {
  counter.fetch_add(1);
  counter.notify_all();
}

/// Polls a condition until it holds (support/sync.hpp). Only for states that the runtime
/// exposes without any notification (e.g. "this blocking thread is idle now").
using spool_test::spin_until;

/// Tells when a runtime's shared state has been freed: wrap one of the Builder's callbacks
/// with probe(); the returned callback owns a token whose destruction — when the runtime
/// frees its configuration, i.e. its shared state — fulfils wait(). Call probe() once.
class RuntimeFreed {
 public:
  template <class Fn>
  auto probe(Fn inner) {
    return [token = std::make_shared<Token>(&promise_), inner]() { inner(); };
  }
  auto probe() {
    return probe([] {});
  }
  void wait() { freed_.wait(); }
  /// True if the runtime has been freed already (no waiting).
  bool is_freed() const {
    return freed_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

 private:
  struct Token {
    explicit Token(std::promise<void>* p) : p_(p) {}
    Token(const Token&) = delete;
    Token& operator=(const Token&) = delete;
    ~Token() { p_->set_value(); }
    std::promise<void>* p_;
  };
  std::promise<void> promise_;
  std::shared_future<void> freed_ = promise_.get_future().share();
};

}  // namespace spool_rt_test
