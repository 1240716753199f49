// spool::JoinSet<T>: a set of spawned tasks, joined in the order they finish.
#pragma once

#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/combinators/branch_output.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/branch.hpp"
#include "spool/detail/child_wakers.hpp"
#include "spool/join_handle.hpp"
#include "spool/runtime.hpp"

namespace spool {

template <class T>
class JoinSet;

/// The future of JoinSet::join_next(): ready with the output of the next task of the set
/// to finish (`std::nullopt` when the set is empty), or throws that task's JoinError
/// (cancelled, or its exception nested inside). Refers to its JoinSet, which must outlive
/// it. Destroying it while pending loses nothing: every finished task stays in the set.
template <class T>
class [[nodiscard]] JoinNext {
 public:
  /// What the future produces: a task's output (branch_output_t: `void` → std::monostate),
  /// or nullopt.
  using Output = std::optional<typename branch_output<T>::type>;

  /// Polls only the tasks that woke it since its last poll.
  Poll<Output> poll(Context& cx) { return set_->poll_next(cx); }

 private:
  friend class JoinSet<T>;
  explicit JoinNext(JoinSet<T>& set) noexcept : set_(&set) {}
  JoinSet<T>* set_;
};

/// A set of spawned tasks that all produce a `T`: spawn into it, then `co_await
/// set.join_next()` to take each task's output in the order the tasks finish. join_next
/// polls only the tasks that finished (or woke it) since its last poll, never all of them.
/// Destroying the set aborts every task still in it (a plain JoinHandle would detach):
/// structured concurrency. Not thread-safe: one owner spawns and joins; the tasks run on
/// their runtime's threads. Neither copyable nor movable (keep it where it was made).
template <class T>
class JoinSet {
 public:
  /// An empty set.
  JoinSet() = default;
  JoinSet(const JoinSet&) = delete;
  JoinSet& operator=(const JoinSet&) = delete;
  /// Aborts every task still in the set, and drops them.
  ~JoinSet() { abort_all(); }

  /// Spawns `fut` (a Task or any Future producing a T, moved in; spool::named for a name) on
  /// the current runtime (as spool::spawn, recording the call site `where`; throws
  /// std::logic_error outside a runtime) and adds it to the set.
  template <Future F>
  requires std::is_same_v<detail::spawn_output_t<F>, T>
  void spawn(F&& fut, SpawnLocation where = SpawnLocation::current()) {
    insert(spool::spawn(std::forward<F>(fut), where));
  }

  /// Spawns `fut` onto `channel` of the current runtime (as spool::spawn_on; throws as it
  /// does) and adds it to the set.
  template <Future F>
  requires std::is_same_v<detail::spawn_output_t<F>, T>
  void spawn_on(ChannelId channel, F&& fut, SpawnLocation where = SpawnLocation::current()) {
    insert(spool::spawn_on(channel, std::forward<F>(fut), where));
  }

  /// Spawns `fut` on `handle`'s runtime and adds it to the set. (Not spawn_on, which names
  /// a priority channel, as everywhere in spool; tokio's JoinSet::spawn_on takes a Handle.)
  template <Future F>
  requires std::is_same_v<detail::spawn_output_t<F>, T>
  void spawn_with(const Handle& handle, F&& fut, SpawnLocation where = SpawnLocation::current()) {
    insert(handle.spawn(std::forward<F>(fut), where));
  }

  /// A future that waits for the next task to finish and takes it out of the set (see
  /// JoinNext): its output, nullopt when the set is empty, or its JoinError.
  JoinNext<T> join_next() noexcept { return JoinNext<T>(*this); }

  /// Takes out of the set a task that has finished, without waiting: its output, or its
  /// JoinError thrown (cancelled, or its exception nested inside), as join_next gives them.
  /// nullopt when no task has finished (or the set is empty; is_empty() tells which): an
  /// accept loop calls it between accepts to reap finished connections. Never blocks or
  /// suspends and registers no waker of the caller's (to wait, co_await join_next()); not
  /// thread-safe, like every JoinSet member: the set's owner calls it, on any thread, in a
  /// task or not. Looks only at the tasks woken since the last join, as join_next does.
  typename JoinNext<T>::Output try_join_next() {
    if (size_ == 0) return std::nullopt;
    return take_finished([](JoinHandle<T>& handle, const Waker& waker) {
      Context child_cx(waker);
      return detail::JoinHandleAccess::poll_unbudgeted(handle, child_cx);
    });
  }

  /// Asks every task in the set to stop (JoinHandle::abort). They stay in the set: each
  /// then joins with a cancelled JoinError, or with its output if it finished first.
  void abort_all() noexcept {
    for (auto& slot : slots_) {
      if (slot) slot->abort();
    }
  }

  /// The number of tasks in the set (spawned and not joined yet, finished or not).
  std::size_t size() const noexcept { return size_; }
  /// True when the set holds no task.
  bool is_empty() const noexcept { return size_ == 0; }

 private:
  friend class JoinNext<T>;
  using Output = typename JoinNext<T>::Output;

  void insert(JoinHandle<T> handle) {
    std::size_t i;
    if (free_.empty()) {
      i = slots_.size();
      try {
        wakers_.grow(i + 1);
        slots_.emplace_back();
        free_.reserve(slots_.capacity());  // so that remove() never allocates
      } catch (...) {
        handle.abort();  // it would not be in the set: do not leave it running unobserved
        throw;
      }
    } else {
      i = free_.back();
      free_.pop_back();
      wakers_.wake(i);  // a pending join_next polls it, so its waker is registered
    }
    slots_[i].emplace(std::move(handle));
    ++size_;
  }

  Poll<Output> poll_next(Context& cx) {
    if (size_ == 0) return Poll<Output>::ready(std::nullopt);
    wakers_.register_parent(cx.waker());
    Output joined = take_finished([&cx](JoinHandle<T>& handle, const Waker& waker) {
      Context child_cx(waker, cx);
      return handle.poll(child_cx);
    });
    if (!joined) return pending;
    return Poll<Output>::ready(std::move(joined));
  }

  // Polls the tasks woken since the last call, with `poll_handle(handle, its waker)`, until
  // one has finished, and takes that one out of the set: its output, or its JoinError
  // propagates. nullopt when none has finished.
  template <class PollHandle>
  Output take_finished(PollHandle poll_handle) {
    Output joined;
    wakers_.for_each_ready([&](std::size_t i) {
      if (!slots_[i]) return false;  // a stale wake of a slot joined earlier
      struct TakeOut {  // takes the task out of the set once its handle gave its result
        JoinSet* set;
        std::size_t i;
        bool done = true;  // the handle gave its output or threw its JoinError
        ~TakeOut() {
          if (done) set->remove(i);
        }
      } take_out{this, i};
      auto p = detail::lift(poll_handle(*slots_[i], wakers_.waker(i)));
      if (p.is_pending()) {
        take_out.done = false;
        return false;
      }
      joined.emplace(std::move(p).value());
      return true;
    });
    return joined;
  }

  void remove(std::size_t i) noexcept {
    slots_[i].reset();
    free_.push_back(i);  // cannot throw: free_ has room for every slot (insert)
    --size_;
  }

  detail::ChildWakers wakers_;  // slot i's waker; never shrinks
  std::vector<std::optional<JoinHandle<T>>> slots_;
  std::vector<std::size_t> free_;  // empty slots, reused first
  std::size_t size_ = 0;           // occupied slots
};

}  // namespace spool
