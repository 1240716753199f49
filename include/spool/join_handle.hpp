// spool::JoinHandle<T>: the handle to a spawned task's result.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "spool/coop.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task.hpp"
#include "spool/detail/join.hpp"

namespace spool {

template <class T>
class JoinHandle;

namespace detail {
// How spawn builds a JoinHandle, how spool::Scope reaches its task and how JoinSet polls
// one without a budget (internal types).
struct JoinHandleAccess {
  template <class T>
  static JoinHandle<T> make(TaskHeader* task) noexcept {
    return JoinHandle<T>(task);
  }
  // The task a handle refers to (null once it gave its result, was detached or moved from).
  template <class T>
  static TaskHeader* task_of(const JoinHandle<T>& handle) noexcept {
    return handle.task_;
  }
  // Polls a live `handle` without spending the cooperative budget: JoinSet::try_join_next
  // is a plain call that cannot yield, and a spent budget must not hide a finished task.
  template <class T>
  static Poll<T> poll_unbudgeted(JoinHandle<T>& handle, Context& cx) {
    return handle.poll_unbudgeted(cx);
  }
};
}  // namespace detail

/// Why a JoinHandle has no value: the task was cancelled (abort() or runtime shutdown),
/// or it threw — then the exception is nested inside (std::rethrow_if_nested, or
/// exception()). what() names the task and, when it threw, gives the root cause's what():
/// that of the innermost std::exception, through any layers of std::nested_exception (an
/// awaited task's JoinError is one).
class SPOOL_API JoinError : public std::runtime_error, public std::nested_exception {
 public:
  /// Builds the error for the task `id`; captures the exception being handled, if any.
  JoinError(bool cancelled, std::uint64_t id)
      : std::runtime_error(detail::join_error_message(
            cancelled, id, cancelled ? nullptr : std::current_exception())),
        cancelled_(cancelled) {}
  /// True when the task was cancelled.
  bool is_cancelled() const noexcept { return cancelled_; }
  /// True when the task threw an exception (it is nested: exception() returns it).
  bool is_exception() const noexcept { return !cancelled_; }
  /// The task's exception (null when cancelled).
  std::exception_ptr exception() const noexcept { return nested_ptr(); }

 private:
  bool cancelled_;
};

/// Cancels a spawned task without owning its result: made by JoinHandle::abort_handle(), it
/// may be copied to anyone (a supervisor, a timeout, a connection registry) while the
/// JoinHandle stays with whoever awaits the output. abort() behaves as JoinHandle::abort;
/// the task's JoinHandle then gives a cancelled JoinError (unless the task finished first).
/// Each copy holds a reference to the task, as a Waker does. The task's locals and output are
/// destroyed as usual, but the header sits in front of the frame in one allocation, so a live
/// AbortHandle keeps that whole memory block; a task that completes while one is alive pins
/// its runtime's scheduler until the last reference goes (also after the Runtime is
/// dropped); and abort() on a finished spawn_blocking call still locks and scans the
/// blocking pool's queue. So drop AbortHandles once is_finished() (a registry should remove
/// finished tasks' handles) rather than keep them for long. Thread-safe: any thread may call
/// abort(), is_finished() and id() on its own copy.
class AbortHandle {
 public:
  /// An empty handle: abort() does nothing, is_finished() is true, id() is 0.
  AbortHandle() noexcept = default;
  /// Another handle to the same task.
  AbortHandle(const AbortHandle& o) noexcept : task_(o.task_) {
    if (task_) detail::task_ref_inc(task_);
  }
  /// Takes `o`'s task; `o` becomes empty.
  AbortHandle(AbortHandle&& o) noexcept : task_(std::exchange(o.task_, nullptr)) {}
  /// Refers to `o`'s task (dropping this handle's own).
  AbortHandle& operator=(AbortHandle o) noexcept {
    std::swap(task_, o.task_);
    return *this;
  }
  /// Drops this handle's reference to the task (the task itself runs on).
  ~AbortHandle() {
    if (task_) detail::task_ref_drop(task_);
  }

  /// Asks the task to stop, as JoinHandle::abort does. No effect once it finished.
  void abort() const noexcept {
    if (task_) detail::join_abort(task_);
  }
  /// True once the task completed (with a value, an exception, or by cancellation), or for
  /// an empty handle. The JoinHandle still holds the outcome.
  bool is_finished() const noexcept { return task_ == nullptr || detail::join_is_finished(task_); }
  /// The task's unique id, as JoinHandle::id() (0 for an empty handle).
  std::uint64_t id() const noexcept { return task_ ? detail::join_task_id(task_) : 0; }
  /// Where the task waits, as JoinHandle::backtrace() (nullopt for an empty handle).
  std::optional<Backtrace> backtrace() const {
    return task_ ? detail::join_backtrace(task_) : std::nullopt;
  }

 private:
  template <class>
  friend class JoinHandle;
  explicit AbortHandle(detail::TaskHeader* task) noexcept : task_(task) {
    if (task_) detail::task_ref_inc(task_);
  }
  detail::TaskHeader* task_ = nullptr;
};

/// Owns the right to a spawned task's result. `co_await handle` (or polling it, e.g. with
/// block_on from a plain thread) gives the task's value, or throws JoinError. Dropping
/// the handle detaches the task: it runs on, and its result is discarded; say so with
/// detach() rather than discarding the [[nodiscard]] handle. Move-only.
/// abort() and is_finished() may be called from any thread; polling needs one owner. To let
/// another thread or party abort the task while this handle keeps the result, give it an
/// abort_handle().
template <class T>
class [[nodiscard]] JoinHandle {
 public:
  /// The task's result type.
  using value_type = T;

  /// Takes over other's task; other is left empty (owning no task).
  JoinHandle(JoinHandle&& other) noexcept : task_(std::exchange(other.task_, nullptr)) {}
  /// Drops (detaches) the task this handle had, then takes over other's, as the constructor.
  JoinHandle& operator=(JoinHandle&& other) noexcept {
    if (this != &other) {
      reset();
      task_ = std::exchange(other.task_, nullptr);
    }
    return *this;
  }
  JoinHandle(const JoinHandle&) = delete;
  JoinHandle& operator=(const JoinHandle&) = delete;
  ~JoinHandle() { reset(); }

  /// Ready with the task's value once it finished; throws JoinError if it was cancelled or
  /// threw. Spends one unit of the polling task's cooperative budget.
  Poll<T> poll(Context& cx) {
    if (task_ == nullptr) {
      throw std::logic_error(
          "spool::JoinHandle polled after it gave its result (or was detached or moved from)");
    }
    if (!detail::coop_poll_proceed(cx)) return pending;
    return poll_unbudgeted(cx);
  }

  /// Asks the task to stop: it is cancelled (its frame destroyed, the destructors of its
  /// locals run) by a worker before its next poll; a poll in progress ends at its next
  /// cooperative point (a leaf's budget check: channels, locks, sockets, JoinHandle,
  /// consume_budget; or yield_if_requested). A blocking call still queued
  /// is cancelled on this thread; one already running finishes. No effect once the task
  /// finished, nor on a handle that gave its result or was detached or moved from.
  void abort() const noexcept {
    if (task_) detail::join_abort(task_);
  }
  /// A handle that can abort the task from elsewhere while this one keeps the result (see
  /// AbortHandle); an empty one for a handle that gave its result or was detached or moved
  /// from.
  AbortHandle abort_handle() const noexcept { return AbortHandle(task_); }
  /// Lets the task run on unobserved: its result is discarded when it finishes. The handle
  /// is empty afterwards, as a moved-from one (polling it throws std::logic_error; abort()
  /// does nothing). Same as dropping the handle, but says so.
  void detach() noexcept { reset(); }

  /// True once the task completed (with a value, an exception, or by cancellation); true
  /// also for a handle that gave its result or was detached or moved from.
  bool is_finished() const noexcept { return task_ == nullptr || detail::join_is_finished(task_); }
  /// The task's unique id (0 for a handle that gave its result or was detached or moved
  /// from).
  std::uint64_t id() const noexcept { return task_ ? detail::join_task_id(task_) : 0; }
  /// Where the task waits: the co_await sites of its chain, innermost first, as
  /// `co_await spool::backtrace()` inside it would give. nullopt while it is queued, being
  /// polled (its chain moves) or read by another thread, once it was asked to stop or
  /// finished, and for an empty handle. The task is held idle while its chain is read: a
  /// wake or an abort meanwhile takes effect when the read ends, on a runtime thread. Not
  /// concurrently with this handle's own poll, move or drop (as every member): from another
  /// thread, ask through an AbortHandle. May throw std::bad_alloc.
  std::optional<Backtrace> backtrace() const {
    return task_ ? detail::join_backtrace(task_) : std::nullopt;
  }

 private:
  friend struct detail::JoinHandleAccess;
  explicit JoinHandle(detail::TaskHeader* task) noexcept : task_(task) {}

  // poll() without its budget check; task_ is not null.
  Poll<T> poll_unbudgeted(Context& cx) {
    if (!detail::join_poll_complete(task_, cx.waker())) return pending;
    detail::TaskHeader* task = std::exchange(task_, nullptr);
    struct Release {
      detail::TaskHeader* t;
      ~Release() { detail::join_drop(t); }
    } release{task};
    std::uint64_t id = detail::join_task_id(task);
    if (detail::join_output_cancelled(task)) throw JoinError(true, id);
    auto& promise = static_cast<typename Task<T>::promise_type&>(detail::join_promise(task));
    try {
      return promise.take_ready();
    } catch (...) {
      std::throw_with_nested(JoinError(false, id));
    }
  }

  void reset() noexcept {
    if (task_) detail::join_drop(std::exchange(task_, nullptr));
  }
  detail::TaskHeader* task_;
};

}  // namespace spool
