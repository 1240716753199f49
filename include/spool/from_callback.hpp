// spool::from_callback: a one-shot callback API awaited as a future.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <variant>

#include "spool/config.hpp"
#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"

namespace spool {

/// What a from_callback future throws when every copy of its Callback was destroyed without
/// being called: the callback API dropped the operation (its request was refused or lost).
class SPOOL_API CallbackDropped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

// What a from_callback future and its Callbacks share (one allocation per operation).
template <class T>
struct CallbackState {
  // The result's phase. kEmpty -> kClaimed: the one call that wins the compare-exchange in
  // claim() (acq_rel; a losing call throws); kClaimed -> kDone: that caller, after writing
  // `result` (release, paired with the future's acquire loads in done()). Never goes back.
  static constexpr std::uint8_t kEmpty = 0;
  static constexpr std::uint8_t kClaimed = 1;
  static constexpr std::uint8_t kDone = 2;
  std::atomic<std::uint8_t> phase{kEmpty};
  // Live Callback copies. Incremented on copy (relaxed: the copy source keeps the count
  // above zero), decremented on destruction (acq_rel: the last one sees every other copy's
  // calls before it decides the operation was dropped).
  std::atomic<std::uint32_t> callbacks{0};
  // Written once by the winning call, before its release store of kDone; read by the future
  // after its acquire load of kDone.
  std::variant<std::monostate, std::conditional_t<std::is_void_v<T>, std::monostate, T>,
               std::exception_ptr>
      result;
  // The waiting future's waker; the winning call wakes it after publishing kDone.
  AtomicWaker waker;

  bool claim() noexcept {
    std::uint8_t expected = kEmpty;
    return phase.compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel,
                                         std::memory_order_acquire);
  }
  void publish() {
    phase.store(kDone, std::memory_order_release);
    waker.wake();
  }
  bool done() const noexcept { return phase.load(std::memory_order_acquire) == kDone; }
};

}  // namespace detail

/// The completion handed to a from_callback start function: call it once with the result
/// (`cb(value)`, or `cb()` for `Callback<void>`), or fail(error). Copyable, so that it fits
/// std::function and C-style APIs that copy their handler; all copies share one result, and
/// only the first call through any of them counts: a second call throws std::logic_error
/// (a callback API that completes an operation twice is broken; nothing is overwritten).
/// When every copy is destroyed uncalled, the future throws CallbackDropped. Thread-safe:
/// copies may be called and destroyed on any thread, also after the future was dropped (the
/// result is then discarded, and nothing is woken).
template <class T>
class Callback {
 public:
  /// Another handle to the same operation.
  Callback(const Callback& o) noexcept : state_(o.state_) {
    if (state_) state_->callbacks.fetch_add(1, std::memory_order_relaxed);
  }
  /// Takes `o`'s handle; `o` becomes empty (calling it throws std::logic_error).
  Callback(Callback&& o) noexcept : state_(std::move(o.state_)) {}
  /// Refers to `o`'s operation (dropping this handle's own, as the destructor does).
  Callback& operator=(Callback o) noexcept {
    std::swap(state_, o.state_);
    return *this;
  }
  /// Drops this handle; the last handle of an uncalled operation fails it with CallbackDropped.
  ~Callback() { release(); }

  /// Completes the operation with `T(args...)` (no arguments for Callback<void>). Throws
  /// std::logic_error when the operation was already completed (through any copy), or on an
  /// empty (moved-from) Callback; if T's constructor throws, the operation fails with that
  /// exception instead.
  template <class... A>
  requires(std::is_void_v<T> ? sizeof...(A) == 0 : std::is_constructible_v<T, A...>) void
  operator()(A&&... args) const {
    claim_or_throw();
    try {
      if constexpr (std::is_void_v<T>) {
        state_->result.template emplace<1>();
      } else {
        state_->result.template emplace<1>(std::forward<A>(args)...);
      }
    } catch (...) {
      state_->result.template emplace<2>(std::current_exception());
    }
    state_->publish();
  }
  /// Completes the operation with `error`: the future rethrows it. Throws std::logic_error
  /// as operator() does.
  void fail(std::exception_ptr error) const {
    claim_or_throw();
    state_->result.template emplace<2>(std::move(error));
    state_->publish();
  }

 private:
  template <class U, class Start>
  friend class FromCallback;
  explicit Callback(std::shared_ptr<detail::CallbackState<T>> state) noexcept
      : state_(std::move(state)) {
    state_->callbacks.fetch_add(1, std::memory_order_relaxed);
  }
  void claim_or_throw() const {
    if (!state_) throw std::logic_error("spool::Callback called after it was moved from");
    if (!state_->claim()) {
      throw std::logic_error(
          "spool::Callback called twice: a from_callback operation completes once (the callback "
          "API called its one-shot handler again)");
    }
  }
  void release() noexcept {
    if (!state_) return;
    if (state_->callbacks.fetch_sub(1, std::memory_order_acq_rel) == 1 && state_->claim()) {
      state_->result.template emplace<2>(std::make_exception_ptr(CallbackDropped(
          "spool::from_callback: every copy of the callback was destroyed without being called "
          "(the callback API dropped the operation)")));
      state_->publish();
    }
    state_.reset();
  }

  std::shared_ptr<detail::CallbackState<T>> state_;
};

/// The future from_callback returns. Move it only before its first poll (as any future).
template <class T, class Start>
class [[nodiscard]] FromCallback {
  using StartResult = std::invoke_result_t<Start&, Callback<T>>;
  static constexpr bool kHasCancel = !std::is_void_v<StartResult>;
  using Cancel = std::conditional_t<kHasCancel, StartResult, std::monostate>;

 public:
  /// The operation's result.
  using value_type = T;

  /// Stores `start`; nothing runs before the first poll.
  explicit FromCallback(Start start) : start_(std::move(start)) {}
  /// Moves the future (only before its first poll, as any future).
  FromCallback(FromCallback&&) = default;
  FromCallback& operator=(FromCallback&&) = delete;
  FromCallback(const FromCallback&) = delete;
  FromCallback& operator=(const FromCallback&) = delete;
  /// Dropped after the start and before the result: runs the cancel function the start
  /// returned (on this thread, before the destructor returns), and forgets this future's
  /// waker, so that a late callback wakes nothing.
  ~FromCallback() {
    if (!state_ || finished_) return;
    state_->waker.take();
    if constexpr (kHasCancel) {
      // A call that already claimed the result finishes the operation: no cancel then.
      if (cancel_ && state_->phase.load(std::memory_order_acquire) == state_->kEmpty) {
        (*cancel_)();
      }
    }
  }

  /// The first poll calls the start function with a Callback; ready (or throwing the
  /// operation's error) once the callback was called, on any thread, also inside the start
  /// function itself. Throws std::logic_error when polled again after it was ready.
  Poll<T> poll(Context& cx) {
    if (finished_) throw std::logic_error("spool::from_callback future polled after it was ready");
    if (!state_) {
      state_ = std::make_shared<detail::CallbackState<T>>();
      Start start = std::move(*start_);
      start_.reset();
      try {
        if constexpr (kHasCancel) {
          cancel_.emplace(start(Callback<T>(state_)));
        } else {
          start(Callback<T>(state_));
        }
      } catch (...) {
        finished_ = true;  // the operation did not start: nothing to wait for or cancel
        throw;
      }
    }
    // Checked before and after the registration: a callback on another thread between the
    // two finds no waker or wakes the one just registered (AtomicWaker), and one that came
    // inline, inside start, is taken without a wake-up.
    if (!state_->done()) {
      state_->waker.register_waker(cx.waker());
      if (!state_->done()) return pending;
    }
    finished_ = true;
    auto& result = state_->result;
    if (result.index() == 2) std::rethrow_exception(std::get<2>(result));
    if constexpr (std::is_void_v<T>) {
      return Poll<void>::ready();
    } else {
      return Poll<T>::ready(std::move(std::get<1>(result)));
    }
  }

 private:
  std::optional<Start> start_;
  std::shared_ptr<detail::CallbackState<T>> state_;
  std::optional<Cancel> cancel_;
  bool finished_ = false;
};

/// Turns a one-shot callback API into a future of T. At the first poll `start(cb)` runs, on
/// the polling thread, with a Callback<T>; it begins the operation and arranges for `cb` to
/// be called once with the result (from any thread, or inline before start returns). The
/// future is ready when `cb` is called; `cb.fail(e)` makes it throw `e`, and a callback
/// destroyed uncalled makes it throw CallbackDropped. An exception from `start` propagates
/// from the poll.
///
/// Cancellation: `start` may return a cancel function (any callable `void()`, which must not
/// throw). Dropping the future after the start and before the result calls it, on the
/// dropping thread, before the drop returns. The callback may still come later (or be running
/// on another thread meanwhile, so cancel must be harmless on an operation that just
/// finished, as most APIs' cancel is): its result is discarded and it wakes nothing.
///
///     spool::Task<int> read_value(LegacyClient& c) {
///       co_return co_await spool::from_callback<int>([&](spool::Callback<int> cb) {
///         auto id = c.get_async([cb](int v) { cb(v); });
///         return [&c, id] { c.cancel(id); };
///       });
///     }
template <class T, class Start>
requires std::is_invocable_v < std::decay_t<Start>
&, Callback < T >> FromCallback<T, std::decay_t<Start>> from_callback(Start&& start) {
  return FromCallback<T, std::decay_t<Start>>(std::forward<Start>(start));
}

}  // namespace spool
