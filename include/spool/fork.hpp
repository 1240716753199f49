// spool::join and spool::join_all: structured fork-join. The children of a join may borrow
// from the awaiting coroutine's frame, since the join does not finish until each of them
// has. On a worker of a multi-thread runtime the awaiting task runs the children itself, in
// order, while idle workers steal the ones it has not reached yet: an unstolen child costs
// a push and a pop on the worker's fork deque, and no task of its own. See docs/fork.md.
#pragma once

#include <array>
#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task.hpp"
#include "spool/detail/fork_join.hpp"
#include "spool/detail/moved_in.hpp"
#include "spool/runtime.hpp"

namespace spool {

/// The future of spool::join: ready with a tuple of the children's values (std::monostate
/// for a void child) once every child finished. See spool::join.
template <class... Ts>
class [[nodiscard]] JoinFuture {
 public:
  /// The children's values, in the order they were given.
  using Output = std::tuple<detail::ForkValue<Ts>...>;

  /// A join of `tasks`, taken over; nothing runs before the first poll.
  explicit JoinFuture(Task<Ts>&&... tasks) : children_(std::move(tasks)...) {}
  /// Only before the first poll (std::logic_error after).
  JoinFuture(JoinFuture&& other)
      : children_((other.core_.check_movable(), std::move(other.children_))) {}
  JoinFuture& operator=(JoinFuture&&) = delete;

  /// Runs the children (see spool::join); throws the first exception once every child
  /// finished or was cancelled.
  Poll<Output> poll(Context& cx) {
    std::array<detail::ForkChildBase*, sizeof...(Ts)> kids = std::apply(
        [](auto&... c) { return std::array<detail::ForkChildBase*, sizeof...(Ts)>{&c...}; },
        children_);
    if (!core_.poll(
            kids.size(), [&](std::size_t i) -> auto& { return *kids[i]; }, cx)) {
      return pending;
    }
    return Poll<Output>::ready(
        std::apply([](auto&... c) { return Output(std::move(*c.value)...); }, children_));
  }

 private:
  friend struct detail::BranchAccess;  // async backtraces: ForkJoinCore::link_awaiting
  using spool_detail_branch_hooks = void;
  void link_awaiting(const detail::TaskPromiseBase* awaiting) noexcept {
    core_.link_awaiting(awaiting);
  }

  std::tuple<detail::ForkChild<Ts>...> children_;
  detail::ForkJoinCore core_;  // last: destroyed first, it waits for the stolen children
};

/// The future of spool::join_all: ready with the children's values in order (nothing for
/// void children) once every child finished. See spool::join_all.
template <class T>
class [[nodiscard]] JoinAllFuture {
 public:
  /// std::vector<T>, or void.
  using Output = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;

  /// A join of `tasks`; nothing runs before the first poll.
  explicit JoinAllFuture(std::vector<Task<T>> tasks) {
    children_.reserve(tasks.size());
    for (Task<T>& t : tasks) children_.emplace_back(std::move(t));
  }
  /// Only before the first poll (std::logic_error after).
  JoinAllFuture(JoinAllFuture&& other)
      : children_((other.core_.check_movable(), std::move(other.children_))) {}
  JoinAllFuture& operator=(JoinAllFuture&&) = delete;

  /// Runs the children (see spool::join_all); throws the first exception once every child
  /// finished or was cancelled.
  Poll<Output> poll(Context& cx) {
    if (!core_.poll(
            children_.size(), [&](std::size_t i) -> auto& { return children_[i]; }, cx)) {
      return pending;
    }
    if constexpr (std::is_void_v<T>) {
      return Poll<void>::ready();
    } else {
      std::vector<T> out;
      out.reserve(children_.size());
      for (auto& c : children_) out.push_back(std::move(*c.value));
      return Poll<Output>::ready(std::move(out));
    }
  }

 private:
  friend struct detail::BranchAccess;  // async backtraces: ForkJoinCore::link_awaiting
  using spool_detail_branch_hooks = void;
  void link_awaiting(const detail::TaskPromiseBase* awaiting) noexcept {
    core_.link_awaiting(awaiting);
  }

  std::vector<detail::ForkChild<T>> children_;
  detail::ForkJoinCore core_;  // last: destroyed first, it waits for the stolen children
};

/// Structured fork-join: `auto [a, b] = co_await spool::join(left(), right());` runs the
/// futures (Tasks, or any Future: each becomes a Task) in parallel and gives a tuple of
/// their values (std::monostate for void ones), in order. The children may borrow from the
/// awaiting coroutine's frame: the join finishes only once each of them has.
///
/// On a worker of a multi-thread runtime the awaiting task runs the children itself, in
/// order, while idle workers steal those it has not reached yet (a stolen child runs as a
/// task of its own, on the awaiting task's channel). On a thread of a multi-thread runtime
/// that is not a worker (block_on, the blocking pool) the children after the first are
/// spawned; elsewhere (a current-thread runtime, any other executor) they run inline, in
/// turn, like when_all.
///
/// The first exception a child throws cancels the children not yet run inline and the
/// stolen ones, and is rethrown once all of them finished or were cancelled. Destroying the
/// future before it finished cancels the children and waits for the stolen ones to be
/// gone. Do not move the future once it was polled (std::logic_error). The futures are
/// moved in: a named one is passed as `std::move(f)` (an lvalue is refused at compile time).
template <Future... Fs>
requires(sizeof...(Fs) >= 1) auto join(Fs&&... futs) {
  static_assert(detail::all_moved_in<Fs...>,
                "spool::join: pass futures by std::move(...); it takes them over");
  // Every one is an rvalue (asserted): std::move is std::forward here, and a misuse stops
  // at the assertion.
  return JoinFuture<future_output_t<std::remove_cvref_t<Fs>>...>(
      detail::as_child_task(std::move(futs))...);
}

/// spool::join for a number of children known at run time: gives a std::vector of their
/// values, in order (nothing for void Tasks). The vector is moved in: a named one is passed
/// as `std::move(v)`.
template <class T>
JoinAllFuture<T> join_all(std::vector<Task<T>>&& tasks) {
  return JoinAllFuture<T>(std::move(tasks));
}

/// Refuses a named vector at compile time: write `join_all(std::move(v))`.
template <class T>
JoinAllFuture<T> join_all(std::vector<Task<T>>& tasks) {
  static_assert(detail::all_moved_in<std::vector<Task<T>>&>,
                "spool::join_all: pass the vector by std::move(...); it takes its tasks over");
  return join_all(std::move(tasks));  // after the failed assertion: no further error
}

template <class T, std::size_t N>
class ForkGroup;

/// The values of a ForkGroup's children once joined, in the order they were forked: a
/// range of T& (valid while the group lives).
template <class T>
class ForkValues {
 public:
  /// A forward iterator over the values.
  class iterator {
   public:
    /// The type of a value.
    using value_type = T;
    /// The type of the distance between two iterators.
    using difference_type = std::ptrdiff_t;
    /// A singular iterator.
    iterator() = default;
    /// The iterator at `c` (ForkValues makes them).
    explicit iterator(detail::ForkChild<T>* c) noexcept : c_(c) {}
    /// The value.
    T& operator*() const noexcept { return *c_->value; }
    /// The next value.
    iterator& operator++() noexcept {
      ++c_;
      return *this;
    }
    /// The next value (gives this one).
    iterator operator++(int) noexcept { return iterator(c_++); }
    /// Same position.
    bool operator==(const iterator&) const = default;

   private:
    detail::ForkChild<T>* c_ = nullptr;
  };

  /// The values of the `n` children from `first` on (ForkGroup::Join makes it).
  ForkValues(detail::ForkChild<T>* first, std::size_t n) noexcept : first_(first), n_(n) {}
  /// The first value.
  iterator begin() const noexcept { return iterator(first_); }
  /// Past the last value.
  iterator end() const noexcept { return iterator(first_ + n_); }
  /// How many children were joined.
  std::size_t size() const noexcept { return n_; }
  /// The value of the `i`-th child forked.
  T& operator[](std::size_t i) const noexcept { return *first_[i].value; }

 private:
  detail::ForkChild<T>* first_;
  std::size_t n_;
};

/// A fork group of at most N children of type T, held in place: nothing is allocated but
/// the children's frames. `group.fork(child())` adds a child (nothing runs yet);
/// `co_await group.join()` runs them all as spool::join_all does and gives a ForkValues
/// range over their values (void for T = void). Declare it in the coroutine that joins
/// (the children may borrow that frame); it can be joined once. Neither copyable nor
/// movable. Its destructor, if the join was cancelled before it finished, cancels the
/// stolen children and waits for them.
template <class T, std::size_t N>
class ForkGroup {
  static_assert(N > 0, "spool::ForkGroup: a group holds at least one child");

 public:
  ForkGroup() = default;
  ForkGroup(const ForkGroup&) = delete;
  ForkGroup& operator=(const ForkGroup&) = delete;
  ~ForkGroup() {
    core_.settle();
    for (std::size_t i = n_; i-- > 0;) child(i).~ForkChild<T>();
  }

  /// Adds `fut` (a Task<T>, or any Future giving T) as the next child. Throws
  /// std::length_error when the group holds N children already, std::logic_error once it
  /// was joined.
  template <Future F>
  void fork(F&& fut) {
    if (joined_) {
      throw std::logic_error("spool::ForkGroup::fork after join(): a group is joined once");
    }
    if (n_ == N) {
      throw std::length_error("spool::ForkGroup::fork: the group is full (it holds N = " +
                              std::to_string(N) + " children); declare a larger group");
    }
    ::new (static_cast<void*>(storage_ + n_ * sizeof(detail::ForkChild<T>)))
        detail::ForkChild<T>(detail::as_child_task(std::forward<F>(fut)));
    ++n_;
  }
  /// How many children were forked.
  std::size_t size() const noexcept { return n_; }

  /// The future of join(): runs the children, then is ready with their values. Destroyed
  /// before it finished (the awaiting task was cancelled), it cancels the children and waits
  /// for the stolen ones, before any local declared after the group goes.
  class [[nodiscard]] Join {
   public:
    /// ForkValues<T>, or void.
    using Output = std::conditional_t<std::is_void_v<T>, void, ForkValues<T>>;
    /// The join of `group`'s children (ForkGroup::join makes it).
    explicit Join(ForkGroup& group) noexcept : group_(&group) {}
    /// Takes `other`'s place (a Join may move at any time: its state is in the group).
    Join(Join&& other) noexcept : group_(std::exchange(other.group_, nullptr)) {}
    Join& operator=(Join&&) = delete;
    ~Join() {
      if (group_ != nullptr) {
        ForkGroup& g = *group_;
        g.core_.abandon(
            g.n_, [&g](std::size_t i) -> auto& { return g.child(i); });
      }
    }
    /// Runs the children (see spool::join_all). Throws std::logic_error on a moved-from Join.
    Poll<Output> poll(Context& cx) {
      if (group_ == nullptr) {
        throw std::logic_error(
            "spool::ForkGroup::Join polled after it was moved from: it no longer refers to its "
            "group; poll (co_await) the Join it was moved into");
      }
      ForkGroup& g = *group_;
      if (!g.core_.poll(
              g.n_, [&g](std::size_t i) -> auto& { return g.child(i); }, cx)) {
        return pending;
      }
      if constexpr (std::is_void_v<T>) {
        return Poll<void>::ready();
      } else {
        return Poll<Output>::ready(ForkValues<T>(g.n_ > 0 ? &g.child(0) : nullptr, g.n_));
      }
    }

   private:
    friend struct detail::BranchAccess;  // async backtraces: ForkJoinCore::link_awaiting
    using spool_detail_branch_hooks = void;
    void link_awaiting(const detail::TaskPromiseBase* awaiting) noexcept {
      if (group_ != nullptr) group_->core_.link_awaiting(awaiting);
    }

    ForkGroup* group_;
  };
  /// Joins the children forked so far (once: a second join throws std::logic_error).
  Join join() {
    if (joined_) throw std::logic_error("spool::ForkGroup::join: the group was joined already");
    joined_ = true;
    return Join(*this);
  }

 private:
  detail::ForkChild<T>& child(std::size_t i) noexcept {
    return *std::launder(
        reinterpret_cast<detail::ForkChild<T>*>(storage_ + i * sizeof(detail::ForkChild<T>)));
  }

  alignas(detail::ForkChild<T>) std::byte storage_[N * sizeof(detail::ForkChild<T>)];
  std::size_t n_ = 0;
  bool joined_ = false;
  detail::ForkJoinCore core_;
};

}  // namespace spool
