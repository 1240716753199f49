// A one-shot signal for the demo: one thread sets a value, one task awaits it.
#pragma once

#include <atomic>
#include <memory>

#include "spool/spool.hpp"

namespace demo {

template <class T>
class Signal {
  struct State {
    spool::AtomicWaker waiter;
    // Set once by send() (release, after writing value); read by the receiver (acquire).
    std::atomic<bool> ready{false};
    T value{};
  };

 public:
  // Sets the value and wakes the waiting task, from any thread.
  void send(T v) {
    state_->value = std::move(v);
    state_->ready.store(true, std::memory_order_release);
    state_->waiter.wake();
  }

  // The leaf future that waits for the value.
  struct Receive {
    std::shared_ptr<State> state;
    int polls = 0;
    spool::Poll<T> poll(spool::Context& cx) {
      ++polls;
      // Register first, then check: a send between the two still finds our waker.
      state->waiter.register_waker(cx.waker());
      if (state->ready.load(std::memory_order_acquire)) return std::move(state->value);
      return spool::pending;
    }
  };
  Receive receive() const { return Receive{state_}; }

 private:
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace demo
