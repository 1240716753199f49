// AnnounceWait: a future wrapper that tells a test, without sleeping, that its future waits.
#pragma once

#include <utility>

#include "spool/core/context.hpp"
#include "spool/sync/semaphore.hpp"

namespace spool_test {

// Polls `inner`; after its first pending poll adds a permit to `waiting`, so that a test can
// wait (`co_await waiting.acquire(n)`) until every task of a group waits on its socket.
template <class F>
class AnnounceWait {
 public:
  AnnounceWait(F inner, spool::Semaphore& waiting) : inner_(std::move(inner)), waiting_(&waiting) {}
  auto poll(spool::Context& cx) {
    auto r = inner_.poll(cx);
    if (r.is_pending() && !announced_) {
      announced_ = true;
      waiting_->add_permits(1);
    }
    return r;
  }

 private:
  F inner_;
  spool::Semaphore* waiting_;
  bool announced_ = false;
};

}  // namespace spool_test
