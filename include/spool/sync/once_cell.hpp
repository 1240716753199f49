// spool::OnceCell<T>: a value initialised at most once, by an async initialiser that
// concurrent callers wait for (tokio's OnceCell), on a one-permit Semaphore.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/fatal_misuse.hpp"
#include "spool/sync/semaphore.hpp"

namespace spool {

/// Thrown by OnceCell::set when the cell cannot take the value: it already holds one, or an
/// initialiser is running (get_or_init; await that instead, or use its value).
class OnceCellSetError : public std::runtime_error {
 public:
  /// The error; `initializing` says which of the two cases it is.
  explicit OnceCellSetError(bool initializing)
      : std::runtime_error(initializing
                               ? "spool::OnceCell::set: an initialiser is running; co_await "
                                 "get_or_init to get the value it sets"
                               : "spool::OnceCell::set: the cell already holds a value; a "
                                 "OnceCell is set once (read it with get())"),
        initializing_(initializing) {}
  /// True when an initialiser was running, false when the cell already held a value.
  bool is_initializing() const noexcept { return initializing_; }

 private:
  bool initializing_;
};

namespace detail {
// A cell whose initialiser this thread is polling now. The marks form a list, innermost
// first, threaded through the frames of the OnceCellInitialising::poll calls on the stack.
struct InitialisingCell {
  const void* cell;
  const InitialisingCell* outer;
};
// The innermost mark of this thread (null when it polls no initialiser). SPOOL_API: one
// variable whichever library's inline code reads it.
SPOOL_API inline thread_local const InitialisingCell* initialising_cells = nullptr;

// True while this thread polls `cell`'s initialiser: a get_or_init of `cell` here would wait
// for the initialiser that awaits it.
inline bool is_initialising_here(const void* cell) noexcept {
  for (const InitialisingCell* m = initialising_cells; m != nullptr; m = m->outer) {
    if (m->cell == cell) return true;
  }
  return false;
}

[[noreturn]] inline void throw_recursive_get_or_init() {
  throw std::logic_error(
      "spool::OnceCell::get_or_init called from inside the same cell's initialiser: it would "
      "wait forever for the initialiser that awaits it; the initialiser must not need its own "
      "cell's value");
}

// The future `init()` returns, marking its cell on this thread while it is polled.
template <class Init>
class OnceCellInitialising {
  using Inner = std::invoke_result_t<Init&>;

 public:
  OnceCellInitialising(const void* cell, Init& init) : cell_(cell), fut_(std::invoke(init)) {}
  Poll<future_output_t<Inner>> poll(Context& cx) {
    const InitialisingCell mark{cell_, initialising_cells};
    initialising_cells = &mark;
    struct Unmark {
      const InitialisingCell* outer;
      ~Unmark() { initialising_cells = outer; }
    } unmark{mark.outer};
    return fut_.poll(cx);
  }

 private:
  const void* cell_;
  Inner fut_;
};
}  // namespace detail

/// What OnceCell<T>::get_or_init accepts: called with no argument, it returns a Future (a
/// Task, or any other) whose output makes a T.
template <class F, class T>
concept OnceCellInit = std::invocable<F&> && Future<std::invoke_result_t<F&>> &&
    std::constructible_from<T, future_output_t<std::invoke_result_t<F&>>>;

/// A cell that is set at most once: by set(), or by the first get_or_init(init) whose
/// initialiser completes. Concurrent get_or_init callers wait (FIFO) while one initialiser
/// runs; if it throws or is cancelled (its task aborted, its future destroyed), the next
/// waiter runs its own initialiser. Once set, the value never changes: get() gives it with
/// one acquire load, get_or_init() without waiting or locking but through its Task (a frame
/// from the frame pool per call): on a hot path, try get() first.
///
/// Built on a Semaphore of one permit: the permit is the right to initialise; the initialiser
/// that succeeds stores the value and closes the semaphore, which releases every waiter (the
/// closed bit means "set"). Thread-safe; works under any executor. Not movable; it must
/// outlive its get_or_init tasks: destroying it while one of them that found it empty has not
/// finished (initialises, waits, or was woken and not yet polled) aborts the process with a
/// message; a get_or_init task never polled is not seen (it must not be polled afterwards).
template <class T>
class OnceCell {
 public:
  /// An empty cell.
  OnceCell() = default;
  /// A cell that holds `value` already.
  explicit OnceCell(T value) : value_(std::move(value)) { publish(); }
  OnceCell(const OnceCell&) = delete;
  OnceCell& operator=(const OnceCell&) = delete;
  /// Destroys the value. Aborts with a message if a get_or_init that found the cell empty
  /// has not finished (its task would then touch freed memory).
  ~OnceCell() {
    if (slow_callers_.load(std::memory_order_acquire) != 0) {
      detail::fatal_misuse(
          "spool::OnceCell destroyed while a get_or_init initialises or waits for it: keep the "
          "cell alive until those tasks are done");
    }
  }

  /// The value, or null while the cell is empty. Never waits.
  T* get() noexcept { return initialized() ? &*value_ : nullptr; }
  /// The value, or null while the cell is empty. Never waits.
  const T* get() const noexcept { return initialized() ? &*value_ : nullptr; }
  /// True once the cell holds its value.
  bool initialized() const noexcept {
    // An acquire load of the semaphore's state: it pairs with publish()'s close (acq_rel),
    // which comes after the value was stored, so the value is visible once this is true.
    return sem_.is_closed();
  }

  /// Stores `value` now. Throws OnceCellSetError if the cell already holds a value or an
  /// initialiser is running (`value` is then destroyed).
  void set(T value) {
    const Store result = store(value);
    if (result != Store::kStored) throw OnceCellSetError(result == Store::kInitializing);
  }
  /// Stores `value` now if the cell is empty and no initialiser runs: nullopt then. Else
  /// gives `value` back (the cell holds a value, or an initialiser runs); never throws
  /// but what moving a T throws.
  std::optional<T> try_set(T value) {
    if (store(value) == Store::kStored) return std::nullopt;
    return std::optional<T>(std::move(value));
  }

  /// The value, initialised first if the cell is empty: `T& v = co_await
  /// cell.get_or_init([] { return make_value(); });` where make_value() returns a Task<T>
  /// (or any Future whose output makes a T). `init` is called only by the caller that holds
  /// the right to initialise, so at most one initialiser runs at a time, and none once the
  /// cell is set; the others wait in FIFO order. If `init` or its future throws, the
  /// exception propagates to this caller only, and the next waiter initialises; likewise if
  /// this task is cancelled while initialising. Cancelling a waiting caller loses nothing.
  /// `init` is moved into the returned task, which must not outlive the cell. A get_or_init
  /// of the same cell from inside its initialiser (which would wait for itself forever)
  /// throws std::logic_error when it is polled on the initialiser's thread, within the
  /// initialiser's poll — as an await in the initialiser is; one spawned elsewhere and awaited
  /// through a JoinHandle is not recognised and waits forever.
  template <class F>
  requires OnceCellInit<F, T> Task<T&> get_or_init(F init) {
    if (T* v = get()) co_return *v;
    if (detail::is_initialising_here(this)) detail::throw_recursive_get_or_init();
    const SlowCaller counted(slow_callers_);
    // Empty when closed: set by another (no AcquireError per waiter). Named before the
    // co_await, as every awaited future here (docs/core.md: g++ 12 and temporaries).
    SemaphoreAcquire acquire = detail::acquire_one_or_empty_when_closed(sem_);
    SemaphorePermit permit = co_await std::move(acquire);
    if (permit.num_permits() != 0) {
      // The permit is never granted once the cell is set (publish closes the semaphore while
      // its permit is out), so this caller initialises. An exception or a cancellation
      // releases the permit with the frame: the next waiter gets it.
      detail::OnceCellInitialising<F> initialiser(this, init);
      value_.emplace(co_await std::move(initialiser));
      permit.forget();
      publish();
    }
    // initialized() (an acquire load) orders this read after the value's store also when the
    // acquire saw the closed bit lock-free.
    co_return *get();
  }

 private:
  enum class Store : std::uint8_t { kStored, kSet, kInitializing };
  // set() / try_set(): moves `value` in if the permit is free (kStored; `value` is left as
  // it was otherwise).
  Store store(T& value) {
    if (initialized()) return Store::kSet;  // the usual refusal, without an exception
    std::optional<SemaphorePermit> permit;
    try {
      permit = sem_.try_acquire();
    } catch (const AcquireError&) {
      return Store::kSet;  // set since the check above
    }
    if (!permit) return Store::kInitializing;  // the permit is out: an initialiser runs
    value_.emplace(std::move(value));
    permit->forget();
    publish();
    return Store::kStored;
  }

  // The value is stored: every waiter (and every later acquire) gets an empty permit (or
  // AcquireError), which the cell reads as "set". Called once, by whoever stored the value.
  void publish() { sem_.close(); }

  // Counts a get_or_init past its fast path, from before it touches the semaphore until its
  // frame ends (done, failed or cancelled), for the destructor's check.
  class SlowCaller {
   public:
    explicit SlowCaller(detail::Atomic<std::size_t>& n) noexcept : n_(n) {
      n_.fetch_add(1, std::memory_order_relaxed);
    }
    SlowCaller(const SlowCaller&) = delete;
    SlowCaller& operator=(const SlowCaller&) = delete;
    ~SlowCaller() { n_.fetch_sub(1, std::memory_order_release); }

   private:
    detail::Atomic<std::size_t>& n_;
  };

  // The right to initialise; closed once the value is stored.
  Semaphore sem_{1};
  // Unfinished get_or_init calls that found the cell empty. Incremented (relaxed) by each
  // before it touches the semaphore; decremented with release after its last touch of the
  // cell; the destructor's acquire load pairs with that release, so a 0 orders every such
  // touch before the value's destruction.
  detail::Atomic<std::size_t> slow_callers_{0};
  // Written once, by the permit holder, before publish(); read only once initialized().
  std::optional<T> value_;
};

}  // namespace spool
