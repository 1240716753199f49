// What a use_task future and its Asio completion handler share: the result, the waker, the
// cancellation signal, and the protocol that cancels the operation when the future is dropped.
#pragma once

// First: it refuses -fno-exceptions builds before Boost is looked for.
#include "spool/config.hpp"

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include "spool/core/atomic_waker.hpp"

namespace spool::asio::detail {

class OpRegistry;

// The non-template part of one bridged operation (src/asio/op_state.cpp).
//
// phase: kPending -> kClaimed -> kDone. Exactly one party claims (compare-exchange, acq_rel):
// the completion handler when Asio calls it, the handler's destructor when Asio destroys it
// uncalled (OperationAbandoned), or the registry of a stopped io_context (IoContextStopped).
// The claimer writes the result, unlinks the op from the registry, then stores kDone (release;
// paired with the future's acquire load in done()) and wakes the waker. Never goes back.
class SPOOL_API OpBase : public std::enable_shared_from_this<OpBase> {
 public:
  static constexpr std::uint8_t kPending = 0;
  static constexpr std::uint8_t kClaimed = 1;
  static constexpr std::uint8_t kDone = 2;

  OpBase() = default;
  OpBase(const OpBase&) = delete;
  OpBase& operator=(const OpBase&) = delete;
  virtual ~OpBase() = default;

  bool claim() noexcept {
    std::uint8_t expected = kPending;
    return phase_.compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel,
                                          std::memory_order_acquire);
  }
  bool done() const noexcept { return phase_.load(std::memory_order_acquire) == kDone; }
  bool pending() const noexcept { return phase_.load(std::memory_order_acquire) == kPending; }
  // After a successful claim and the result's write: unlinks, publishes kDone, wakes.
  void publish() noexcept;
  // Claims and fails the operation with `error`; false if another party claimed it first.
  bool fail(std::exception_ptr error) noexcept;
  // Fails the operation that the caller claimed: stores `error`, then publishes.
  void fail_claimed(std::exception_ptr error) noexcept;

  // Before the initiation: remembers the operation's executor (empty when the initiation
  // names none) and links the op into its context's registry. False when that context is
  // stopped: the op is then not linked, and must fail without being started.
  bool attach(boost::asio::any_io_executor executor);
  // The future was dropped: forgets its waker and, while the operation is still pending,
  // cancels it through the signal, on the operation's executor, and returns only once that
  // emit ran; or emits here when nothing runs the io_context (stopped, run by spool and not
  // now, or never run yet), or once it is found stopped: the I/O object may go next.
  void cancel_from_drop() noexcept;

  // The slot the completion handler hands Asio (its associated cancellation slot).
  boost::asio::cancellation_slot slot() noexcept { return signal_.slot(); }
  AtomicWaker& waker() noexcept { return waker_; }
  // Emits a terminal cancellation, at most once per operation and only while the handler is
  // neither called nor destroyed (after that the slot's handler may refer to an I/O object
  // that is gone; and the drop's own emit and the one it queued on the executor must not both
  // run, for the second could come after the drop returned). Called where nothing else runs
  // the operation, or on its executor; returns once the emit (this one or another's) is over.
  void emit_once() noexcept;
  // The completion handler was called or destroyed (its first act): no emit after this.
  void handler_gone() noexcept { handler_gone_.store(true, std::memory_order_release); }

  // The registry's intrusive list (guarded by that registry's mutex).
  OpBase* prev_ = nullptr;
  OpBase* next_ = nullptr;

 protected:
  // Stores `error` as the result (after a successful claim).
  virtual void set_error(std::exception_ptr error) noexcept = 0;

 private:
  std::atomic<std::uint8_t> phase_{kPending};
  AtomicWaker waker_;
  // Emitted (terminal) at most once (emit_once), on the operation's executor or where
  // nothing runs it.
  boost::asio::cancellation_signal signal_;
  std::mutex emit_mu_;  // guards emitted_ and the emit itself
  bool emitted_ = false;
  // Set (release) by the handler when called or destroyed; read (acquire) under emit_mu_ by
  // emit_once and by the drop.
  std::atomic<bool> handler_gone_{false};
  boost::asio::any_io_executor executor_;
  // The registry the op is linked in while pending, or null (set once, before the
  // initiation, by attach; read by the claimer).
  OpRegistry* registry_ = nullptr;
};

// One operation with completion signature void(Args...): its arguments, or an error.
template <class... Args>
class Op final : public OpBase {
 public:
  // Called by the completion handler after it claimed the op.
  template <class... A>
  void set_value(A&&... args) {
    try {
      value_.emplace(std::forward<A>(args)...);
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  // The result, once done(): rethrows a bridge error; else the handler's arguments.
  std::tuple<Args...> take() {
    if (error_) std::rethrow_exception(error_);
    return std::move(*value_);
  }

 private:
  void set_error(std::exception_ptr error) noexcept override { error_ = std::move(error); }

  std::optional<std::tuple<Args...>> value_;
  std::exception_ptr error_;
};

}  // namespace spool::asio::detail
