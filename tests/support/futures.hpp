// Small leaf futures for tests: ready at once, yield (wake self) N times, a one-shot signal,
// a future made of a lambda, and a wrapper that installs a reactor hook on every poll.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <utility>

#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/poll_fn.hpp"
#include "spool/core/reactor_hook.hpp"
#include "spool/core/waker.hpp"

namespace spool_test {

// Ready on the first poll with `value`.
template <class T>
class ReadyFuture {
 public:
  explicit ReadyFuture(T value) : value_(std::move(value)) {}
  spool::Poll<T> poll(spool::Context&) { return spool::Poll<T>::ready(std::move(value_)); }

 private:
  T value_;
};

template <>
class ReadyFuture<void> {
 public:
  spool::Poll<void> poll(spool::Context&) { return spool::Poll<void>::ready(); }
};

// Pending `yields` times, each time waking its own waker (wake_by_ref) inside poll before
// returning pending; then ready. Counts its polls in `*polls` when given (the counter is
// outside so that it can be read after the future was moved into a Task's frame).
class YieldNow {
 public:
  explicit YieldNow(int yields = 1, int* polls = nullptr) : remaining_(yields), polls_(polls) {}
  spool::Poll<void> poll(spool::Context& cx) {
    if (polls_ != nullptr) ++*polls_;
    if (remaining_ == 0) return spool::Poll<void>::ready();
    --remaining_;
    cx.waker().wake_by_ref();
    return spool::pending;
  }

 private:
  int remaining_;
  int* polls_;
};

// A one-shot event that any thread may fire. Its future is a correct leaf: on EVERY poll it
// registers cx.waker() in an AtomicWaker and then checks the flag, so it always holds the
// latest waker. Copies of a Signal and its futures share one state.
class Signal {
 public:
  class Future;

  Signal() : state_(std::make_shared<State>()) {}

  // Sets the flag, then wakes the registered waker (any thread).
  void fire() const {
    // Release: a poll that sees the flag sees what was written before fire().
    state_->fired.store(true, std::memory_order_release);
    state_->waker.wake();
  }
  bool fired() const { return state_->fired.load(std::memory_order_acquire); }
  // Completed polls: incremented after a poll registered its waker and checked the flag.
  int polls() const { return state_->polls.load(); }
  Future future() const;

  // True when the waker registered now wakes the same task as `w`. Takes the registered
  // waker out and registers it back: call it only while no poll of the future runs.
  bool registered_will_wake(const spool::Waker& w) const {
    std::optional<spool::Waker> stored = state_->waker.take();
    if (!stored) return false;
    bool same = stored->will_wake(w);
    state_->waker.register_waker(*stored);
    return same;
  }
  bool has_registered_waker() const {
    std::optional<spool::Waker> stored = state_->waker.take();
    if (stored) state_->waker.register_waker(*stored);
    return stored.has_value();
  }

 private:
  struct State {
    std::atomic<bool> fired{false};
    spool::AtomicWaker waker;
    std::atomic<int> polls{0};
  };
  std::shared_ptr<State> state_;
};

class Signal::Future {
 public:
  spool::Poll<void> poll(spool::Context& cx) {
    state_->waker.register_waker(cx.waker());
    // Acquire: pairs with fire()'s release.
    const bool fired = state_->fired.load(std::memory_order_acquire);
    state_->polls.fetch_add(1);
    if (fired) return spool::Poll<void>::ready();
    return spool::pending;
  }

 private:
  friend class Signal;
  explicit Future(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

inline Signal::Future Signal::future() const { return Future(state_); }

// A future whose poll is `f(cx)` (spool's own, under the name the tests have always used).
using spool::poll_fn;

// Installs `hook` through cx.install_reactor on every poll, then polls `inner` (held by
// value; use a handle-like future such as Signal::Future). Records the install results.
template <class F>
class WithReactor {
 public:
  WithReactor(std::shared_ptr<spool::ReactorHook> hook, F inner)
      : hook_(std::move(hook)), inner_(std::move(inner)) {}
  auto poll(spool::Context& cx) {
    ++polls_;
    if (cx.install_reactor(hook_)) ++installed_;
    return inner_.poll(cx);
  }
  int polls() const { return polls_; }
  int installed() const { return installed_; }  // polls where install_reactor returned true

 private:
  std::shared_ptr<spool::ReactorHook> hook_;
  F inner_;
  int polls_ = 0;
  int installed_ = 0;
};

}  // namespace spool_test
