// The registry of one execution context's pending use_task operations: how a stopped or shut
// down io_context reaches every task that waits on it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>

#include "spool/asio/op_state.hpp"
#include "spool/detail/spin_lock.hpp"

namespace spool::asio::detail {

// An Asio service: one per execution context (io_context, or any other), made at the first
// use_task operation on it. Thread-safe.
class OpRegistry final : public boost::asio::execution_context::service {
 public:
  static boost::asio::execution_context::id id;  // NOLINT: Asio's service key

  explicit OpRegistry(boost::asio::execution_context& ctx);

  // The registry of `executor`'s context (any executor: io_context's, a strand's, an
  // any_io_executor), made on first use.
  static OpRegistry& of(const boost::asio::any_io_executor& executor);

  // Links `op` unless the context is a stopped io_context (then false: `op` not linked).
  bool link(OpBase* op);
  // Unlinks `op` (its claimer does, before publishing).
  void unlink(OpBase* op) noexcept;
  // The context is a stopped io_context: fails every linked op with IoContextStopped, cancels
  // each through its signal, here (nothing runs the context), and releases drops waiting for
  // their cancellation to run on it.
  void fail_stopped();
  // True when the context is an io_context that is stopped now.
  bool stopped() const noexcept {
    return io_.load(std::memory_order_acquire) != nullptr &&
           io_.load(std::memory_order_acquire)->stopped();
  }
  // For a drop, under the mutex: nullopt when nothing runs the context now (it is stopped, or
  // spool runs it, drive or run, and no such call is in progress); else the epoch to wait on.
  std::optional<std::uint64_t> busy_epoch();
  // Waits until `done()` (read under the mutex) or a change of runners after `epoch`; returns
  // done().
  template <class Done>
  bool wait(std::uint64_t epoch, Done&& done) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done() || epoch_ != epoch; });
    return done();
  }
  // A drive or run call on `io` begins / ends (on the calling thread). The end moves the epoch
  // (a drop waiting for its cancellation to run there may have to cancel itself).
  void runner_enter(boost::asio::io_context& io);
  void runner_exit();
  // Wakes the waiters of wait() (after what their done() reads changed, under the mutex).
  template <class Change>
  void notify(Change&& change) {
    {
      std::lock_guard lock(mu_);
      change();
    }
    cv_.notify_all();
  }

 private:
  void shutdown() override;
  // Claims every linked op that no other party claimed yet and moves the epoch (waking the
  // drops that wait on it); the caller fails each.
  std::vector<std::shared_ptr<OpBase>> claim_all();

  // The context as an io_context (whose stopped() tells), once an executor showed it is one
  // (execution_context is not polymorphic), or a drive / run call named it: set by of() and
  // runner_enter (release; always the same value), read by stopped() (acquire).
  std::atomic<boost::asio::io_context*> io_{nullptr};
  std::mutex mu_;
  std::condition_variable cv_;
  // The linked ops, guarded by list_lock_ (a spin lock: two uncontended critical sections per
  // operation, a few instructions each, where a pthread mutex costs far more).
  spool::detail::SpinLock list_lock_;
  OpBase* head_ = nullptr;
  // Moved (under mu_) by every stop, shutdown and runner exit; see busy_epoch and wait.
  std::uint64_t epoch_ = 0;
  int runners_ = 0;       // drive / run calls in progress (guarded by mu_)
  bool managed_ = false;  // a drive or run call ran the context once (guarded by mu_)
};

}  // namespace spool::asio::detail
