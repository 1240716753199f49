#include "spool/sync/cancellation_token.hpp"

#include <mutex>
#include <string>
#include <vector>

#include "spool/detail/atomic.hpp"

namespace spool {

namespace detail {

// One token's state, shared by its copies, its futures, and (weakly) its parent.
struct CancelState {
  // Set once: by cancel under `lock` (release), or by child_token before the state is shared
  // (relaxed: the token's hand-over publishes it). Read with acquire by is_cancelled and the
  // futures (pairs with cancel's store: what the canceller did before is visible).
  Atomic<bool> cancelled{false};
  // Woken (notify_waiters) once, by cancel, after `cancelled` was set.
  Notify notify;
  // Guards `children` and the transition of `cancelled`.
  Mutex lock;
  // The child tokens (weak: a child dropped by everyone goes away); expired entries are
  // pruned when the list has doubled since the last pruning.
  std::vector<std::weak_ptr<CancelState>> children;
  std::size_t prune_at = 8;
  // The parent token's state, kept alive while this one lives: a grandchild stays reachable
  // from the root even when nobody holds the token in between. Written once, before the
  // state is shared; read only by the destructor.
  std::shared_ptr<CancelState> parent;

  CancelState() = default;
  CancelState(const CancelState&) = delete;
  CancelState& operator=(const CancelState&) = delete;
  // Releases the chain of ancestors iteratively (a chain of 10^5 tokens must not recurse):
  // each ancestor this state held last is taken apart here rather than by its own destructor.
  ~CancelState() {
    std::shared_ptr<CancelState> p = std::move(parent);
    while (p && p.use_count() == 1) {
      std::shared_ptr<CancelState> next = std::move(p->parent);
      p.reset();
      p = std::move(next);
    }
  }
};

}  // namespace detail

CancellationToken::CancellationToken() : state_(std::make_shared<detail::CancelState>()) {}

const std::shared_ptr<detail::CancelState>& CancellationToken::state(const char* what) const {
  if (!state_) {
    throw std::logic_error(std::string("spool::CancellationToken::") + what +
                           " on a moved-from token; use a copy of a live token");
  }
  return state_;
}

bool CancellationToken::is_cancelled() const {
  return state("is_cancelled")->cancelled.load(std::memory_order_acquire);
}

void CancellationToken::cancel() {
  // Iterative (a deep chain of children must not grow the stack): each state cancelled here
  // hands its children over to the work list.
  std::vector<std::shared_ptr<detail::CancelState>> work{state("cancel")};
  while (!work.empty()) {
    std::shared_ptr<detail::CancelState> s = std::move(work.back());
    work.pop_back();
    std::vector<std::weak_ptr<detail::CancelState>> children;
    {
      std::lock_guard guard(s->lock);
      if (s->cancelled.load(std::memory_order_relaxed)) continue;
      s->cancelled.store(true, std::memory_order_release);
      children.swap(s->children);
    }
    s->notify.notify_waiters();
    for (auto& w : children) {
      if (auto child = w.lock()) work.push_back(std::move(child));
    }
  }
}

CancellationToken CancellationToken::child_token() const {
  const auto& parent = state("child_token");
  auto child = std::make_shared<detail::CancelState>();
  child->parent = parent;
  std::lock_guard guard(parent->lock);
  if (parent->cancelled.load(std::memory_order_relaxed)) {
    // Relaxed: nobody else has the child yet; the token's hand-over publishes it.
    child->cancelled.store(true, std::memory_order_relaxed);
  } else {
    if (parent->children.size() >= parent->prune_at) {
      std::erase_if(parent->children, [](const auto& w) { return w.expired(); });
      parent->prune_at = 2 * parent->children.size() + 8;
    }
    parent->children.push_back(child);
  }
  return CancellationToken(std::move(child));
}

Poll<void> WaitForCancellation::poll(Context& cx) {
  if (!state_) {
    throw std::logic_error("spool::WaitForCancellation polled after it was moved from");
  }
  // Acquire: pairs with cancel's release store (what the canceller did before is visible).
  return wait_.poll(cx, state_->notify,
                    [this] { return state_->cancelled.load(std::memory_order_acquire); });
}

}  // namespace spool
