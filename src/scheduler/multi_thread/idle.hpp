// Which workers are parked and which are searching for work.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <vector>

#include "spool/detail/atomic.hpp"

namespace spool::detail {

// Coordinates parking so that at most half of the workers search for work at once and a
// new task always finds a worker: a pusher wakes a parked worker only when no worker is
// searching (a searcher will find the task), and the last searcher to park re-checks every
// queue first (see MultiThread::park; with levels, so does a worker that parks without having
// searched, since a pusher that saw it unparked relied on it too).
class Idle {
 public:
  // Where a pusher published the task it wants a worker for (see should_notify).
  enum class Published { kInjectQueue, kLocalQueue };

  explicit Idle(std::uint32_t num_workers)
      : num_workers_(num_workers), state_(pack(num_workers, 0)) {
    sleepers_.reserve(num_workers);
  }

  // Picks a parked worker to wake for a task just published `where`, counting it as
  // unparked and searching; nullopt when one is searching already or none is parked.
  std::optional<std::uint32_t> worker_to_notify(Published where) {
    if (!should_notify(where)) return std::nullopt;
    std::lock_guard lock(mutex_);
    // Under the lock a load will do: the pairing was settled by the read above.
    if (!needs_worker(state_.load(std::memory_order_seq_cst)) || sleepers_.empty())
      return std::nullopt;
    // Seq_cst: pairs with transition_to_parked, see InjectQueue::is_empty.
    state_.fetch_add(pack(1, 1), std::memory_order_seq_cst);
    std::uint32_t w = sleepers_.back();
    sleepers_.pop_back();
    return w;
  }

  // The worker is about to park. True when it was the last searcher (it must then re-check
  // the queues, since pushers relied on it).
  bool transition_to_parked(std::uint32_t worker, bool is_searching) {
    std::lock_guard lock(mutex_);
    std::uint32_t dec = pack(1, is_searching ? 1 : 0);
    // Seq_cst RMW, then the caller's queue re-check: pairs with should_notify.
    std::uint32_t prev = state_.fetch_sub(dec, std::memory_order_seq_cst);
    sleepers_.push_back(worker);
    return is_searching && searching(prev) == 1;
  }

  // A worker with no work wants to steal; refused when half the workers already search.
  bool transition_to_searching() {
    std::uint32_t s = state_.load(std::memory_order_seq_cst);
    if (2 * searching(s) >= num_workers_) return false;
    state_.fetch_add(pack(0, 1), std::memory_order_seq_cst);
    return true;
  }

  // A searcher found work; true when it was the last searcher (it then wakes another
  // worker, so that the remaining work is still looked for).
  bool transition_from_searching() {
    // Seq_cst RMW, then the caller's work_pending: pairs with should_notify.
    std::uint32_t prev = state_.fetch_sub(pack(0, 1), std::memory_order_seq_cst);
    return searching(prev) == 1;
  }

  // True while `worker` is in the sleeper list (it was not notified).
  bool is_parked(std::uint32_t worker) {
    std::lock_guard lock(mutex_);
    for (std::uint32_t w : sleepers_) {
      if (w == worker) return true;
    }
    return false;
  }

  // Removes `worker` from the sleeper list if it is there (it woke for another reason,
  // such as shutdown, and will look for work). False if it was not: a notify took it out
  // meanwhile and counted it as searching, which the worker must then be.
  bool unpark_by_id(std::uint32_t worker) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < sleepers_.size(); ++i) {
      if (sleepers_[i] == worker) {
        sleepers_.erase(sleepers_.begin() + static_cast<std::ptrdiff_t>(i));
        state_.fetch_add(pack(1, 0), std::memory_order_seq_cst);
        return true;
      }
    }
    return false;
  }

  // Some parked worker, left parked (in the list), or nullopt: the worker to hand the
  // driver to — unparked, it finds no work and parks again, in the driver, now free.
  std::optional<std::uint32_t> a_parked_worker() {
    // Every worker unparked (relaxed, a hint): nobody to hand to, and no lock taken. A worker
    // that parks after this read takes the driver itself if it is free.
    if (unparked(state_.load(std::memory_order_relaxed)) == num_workers_) return std::nullopt;
    std::lock_guard lock(mutex_);
    if (sleepers_.empty()) return std::nullopt;
    return sleepers_.back();
  }

  std::uint32_t num_searching() const { return searching(state_.load(std::memory_order_relaxed)); }

 private:
  static constexpr std::uint32_t pack(std::uint32_t unparked, std::uint32_t searching) {
    return (unparked << 16) | searching;
  }
  static constexpr std::uint32_t searching(std::uint32_t s) { return s & 0xffff; }
  static constexpr std::uint32_t unparked(std::uint32_t s) { return s >> 16; }
  // Whether a pusher must wake a worker for the task it published `where`. The pairing
  // (store buffering, as in tokio's idle.rs) is with the last searcher, which does the
  // seq_cst fetch_sub of transition_to_parked (or of transition_from_searching) and then
  // work_pending's loads of every queue: each local queue's tail_ (acquire) and the inject
  // queue's len_ (seq_cst). The two must not both miss: the pusher reading an old
  // "searching" count while the searcher reads the queue as it was before the push.
  //  - kInjectQueue: the push stored len_ with seq_cst; this seq_cst load, the searcher's
  //    seq_cst RMW and its seq_cst load of len_ make four seq_cst operations, which have
  //    one total order: whichever side comes second sees the other.
  //  - kLocalQueue: the push stored tail_ with release only, and the searcher loads it with
  //    acquire, so a load here could miss as the searcher does; read with an RMW instead
  //    (fetch_add(0), as tokio). The RMWs on state_ are totally ordered: if this one comes
  //    after the searcher's, it reads searching == 0 and this pusher notifies; if it comes
  //    first, the searcher's RMW reads from it (or from a later RMW of its release
  //    sequence), synchronises with it, and the searcher's tail_ load sees the task.
  //    (tests/model/park_notify_model.cpp finds the missed execution with a load. A seq_cst
  //    fence before the load would do under C++20's rules, but Relacy checks C++11's, which
  //    do not order a fence against a seq_cst load of another object.)
  //  Local pushes are the frequent ones (every requeue of a yielded task): the scheduler
  //  batches the notification of a run of them (NotifyBatch: requeue_deferred, and the wakes
  //  of one pass in the driver), so the RMW, which takes the word's cache line exclusive, is
  //  paid once per batch.
  //  A fork deque (spool::join's children) pairs as a local queue does, with its bottom_
  //  (release store; work_pending loads it with acquire), but only for a push into an empty
  //  deque: a push into a non-empty one tells nobody, since its owner takes the child back
  //  itself if no thief does (liveness never depends on a thief).
  bool should_notify(Published where) {
    std::uint32_t s = where == Published::kLocalQueue
                          ? state_.fetch_add(0, std::memory_order_seq_cst)
                          : state_.load(std::memory_order_seq_cst);
    return needs_worker(s);
  }
  bool needs_worker(std::uint32_t s) const {
    return searching(s) == 0 && unparked(s) < num_workers_;
  }

  const std::uint32_t num_workers_;
  // (unparked << 16) | searching. Written with seq_cst RMWs (under mutex_ when the
  // sleeper list changes with it); read in the notify decision with a seq_cst RMW or load
  // (should_notify: the pairing is written there), with seq_cst loads in
  // transition_to_searching (a limit, not a correctness condition) and relaxed in
  // num_searching (metrics and tests).
  Atomic<std::uint32_t> state_;
  Mutex mutex_;
  std::vector<std::uint32_t> sleepers_;  // guarded by mutex_
};

}  // namespace spool::detail
