// Polling a future by hand, with a Waker that counts its wake-ups: the deterministic tests of
// the sync primitives step their futures one poll at a time.
#pragma once

#include "spool/core/context.hpp"
#include "spool/core/waker.hpp"
#include "support/counting_waker.hpp"

namespace spool_test {

// One waiting party: polls futures with its own CountingWaker, so that a test can tell
// which party a primitive woke.
class HandPoller {
 public:
  // Polls `f` once with this party's waker.
  template <class F>
  auto poll(F& f) {
    spool::Waker w = waker_.waker();
    spool::Context cx(w);
    return f.poll(cx);
  }
  // The wake-ups delivered to this party's wakers so far.
  int wakes() const { return waker_.counts().total_wakes(); }
  // Clones of this party's waker still alive (kept by the futures it polled).
  int live_wakers() const { return waker_.counts().live(); }

 private:
  CountingWaker waker_;
};

}  // namespace spool_test
