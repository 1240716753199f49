// spool::TaskLocal<T>: a value set for a future and everything it awaits (a request id, a
// tracing context), read with get() from anywhere inside (docs/tasks.md).
#pragma once

#include <stdexcept>
#include <type_traits>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/task_locals.hpp"

namespace spool {

/// get() of a TaskLocal that no scope around the running code set.
class TaskLocalUnset : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

template <class T>
class TaskLocal;

/// The future of TaskLocal::scope: polls its future with the value set. Ready with that
/// future's output. Must not move once polled (its value's place is linked into the chain its
/// future and its children read): a move then throws std::logic_error. Every poll must come
/// under the scopes of its first (its node links to theirs): a poll under others throws
/// std::logic_error.
template <class T, Future F>
class [[nodiscard]] TaskLocalScope {
 public:
  /// `fut` with `value` set for `local` (made by TaskLocal::scope).
  TaskLocalScope(const TaskLocal<T>& local, T value, F fut)
      : value_(std::move(value)), fut_(std::move(fut)) {
    node_.key = &local;
  }
  /// Only before the first poll.
  TaskLocalScope(TaskLocalScope&& other)
      : value_(std::move(other.checked_unlinked().value_)), fut_(std::move(other.fut_)) {
    node_.key = other.node_.key;
  }
  TaskLocalScope& operator=(TaskLocalScope&&) = delete;

  /// Polls the future with the value set: everything that future polls in turn (the tasks
  /// it awaits, when_all's branches, join's children, a scope's children) sees it.
  Poll<future_output_t<F>> poll(Context& cx) {
    if (!linked_) {
      node_.value = &value_;
      node_.parent = detail::current_task_locals();
      linked_ = true;
    } else if (node_.parent != detail::current_task_locals()) {
      // The scopes of the first poll may be gone: reading through them would touch freed
      // memory (a future polled by reference in a poll_fn inside a shorter-lived scope).
      throw std::logic_error(
          "spool::TaskLocal::scope's future polled under other scopes than at its first poll: "
          "poll it always from the same place (co_await it where it was first polled)");
    }
    detail::TaskLocalsInstalled installed(&node_);
    return fut_.poll(cx);
  }

 private:
  TaskLocalScope& checked_unlinked() {
    if (linked_) {
      throw std::logic_error(
          "spool::TaskLocal::scope's future moved after its first poll: poll it where it stays "
          "(co_await it, or keep it in place)");
    }
    return *this;
  }

  T value_;
  F fut_;
  detail::TaskLocalNode node_;
  bool linked_ = false;  // node_ is in a chain: it must not move
};

/// A task-local value: `local.scope(value, fut)` sets it for `fut` and all it awaits;
/// `local.get()` reads it from inside. Scopes nest (the innermost wins). Inherited by what is
/// polled inside the scope — awaited tasks and generators, when_all / select branches, join's
/// children (stolen ones too) and spool::scope's children (which see the values in force where
/// the scope's future was first polled) — but not by spool::spawn: a spawned task is not part
/// of the future (it may outlive it), so it starts with none; pass the value explicitly with
/// `spawn(local.inherit(fut))`. Declare one per value, with static storage (its address is its
/// key): `inline spool::TaskLocal<std::string> request_id;`. Thread-safe: readers on other
/// threads (children) share the value read-only.
///
/// Cost: only for code that uses it — a scope links one node per poll; get() walks the
/// scopes being polled. Tasks and joins that use none pay a thread-local load per join.
template <class T>
class TaskLocal {
  static_assert(std::is_object_v<T> && !std::is_const_v<T>,
                "spool::TaskLocal<T>: T is a value type");

 public:
  TaskLocal() = default;
  TaskLocal(const TaskLocal&) = delete;
  TaskLocal& operator=(const TaskLocal&) = delete;

  /// `fut` with this task-local set to `value` (see the class comment).
  template <Future F>
  TaskLocalScope<T, std::remove_cvref_t<F>> scope(T value, F&& fut) const {
    static_assert(!std::is_lvalue_reference_v<F>,
                  "spool::TaskLocal::scope: pass the future by std::move");
    return {*this, std::move(value), std::forward<F>(fut)};
  }
  /// `fut` with this task-local set to a copy of its current value (throws TaskLocalUnset
  /// if none): the explicit way to hand it to a spawned task, `spawn(local.inherit(fut))`.
  template <Future F>
  TaskLocalScope<T, std::remove_cvref_t<F>> inherit(F&& fut) const {
    return scope(T(get()), std::forward<F>(fut));
  }

  /// The value of the innermost scope being polled; throws TaskLocalUnset if none.
  const T& get() const {
    if (const T* v = try_get()) return *v;
    throw TaskLocalUnset(
        "spool::TaskLocal::get: no value is set here; run the future inside "
        "local.scope(value, future) (a spawned task does not inherit its spawner's values: "
        "spawn local.inherit(future))");
  }
  /// The value of the innermost scope being polled, or null if none.
  const T* try_get() const noexcept {
    for (const detail::TaskLocalNode* n = detail::current_task_locals(); n != nullptr;
         n = n->parent) {
      if (n->key == this) return static_cast<const T*>(n->value);
    }
    return nullptr;
  }
};

}  // namespace spool
