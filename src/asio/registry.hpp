// The registry of one execution context's pending use_task operations: how a stopped or shut
// down io_context reaches every task that waits on it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
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
  // For a drop: when nothing runs the context now, calls `emit()` (the drop's cancellation)
  // here, under the mutex, and returns nullopt; else returns the epoch to wait on. Nothing
  // runs it when it is stopped; when spool runs it (drive, run) and no such call is in
  // progress; or when it is an io_context that spool does not run and that no thread has run
  // since the bridge first used it (its probe has not run: see mark_run). Under the mutex, as
  // runner_enter and the probe take it: neither can start running the context meanwhile.
  template <class Emit>
  std::optional<std::uint64_t> emit_if_idle(Emit&& emit) {
    std::lock_guard lock(mu_);
    const bool unrun = io_.load(std::memory_order_acquire) != nullptr && !managed_ && !run_seen_;
    if (stopped() || (managed_ && runners_ == 0) || unrun) {
      emit();
      return std::nullopt;
    }
    return epoch_;
  }
  // Waits until `done()` (read under the mutex), a change of runners after `epoch`, or a stop
  // of an io_context that spool does not run; returns done(). A stop under a plain io.run()
  // tells nobody: it is polled, at growing intervals (kFirstStopPoll to kLastStopPoll). Under
  // drive / run, stopped() turns true while a handler may still run: their runner_exit and
  // fail_stopped tell of the stop once it is over, and nothing is polled.
  template <class Done>
  bool wait(std::uint64_t epoch, Done&& done) {
    std::unique_lock lock(mu_);
    auto over = [&] { return done() || epoch_ != epoch || (!managed_ && stopped()); };
    if (io_.load(std::memory_order_acquire) == nullptr || managed_) {
      cv_.wait(lock, over);  // not an io_context, or spool runs it: no stop to poll
      return done();
    }
    std::chrono::milliseconds period = kFirstStopPoll;
    while (!cv_.wait_for(lock, period, over)) period = std::min(period * 2, kLastStopPoll);
    return done();
  }
  // A drive or run call on `io` begins / ends (on the calling thread). The end moves the epoch
  // (a drop waiting for its cancellation to run there may have to cancel itself).
  void runner_enter(boost::asio::io_context& io);
  void runner_exit();
  // Called by a thread that runs the io_context: the probe posted there when the bridge first
  // used it (learn_io). Takes the mutex, so it waits for an emit_if_idle in progress; every
  // handler queued after the probe runs after it (an io_context runs its queue in order).
  void mark_run();

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
  static constexpr std::chrono::milliseconds kFirstStopPoll{1};
  static constexpr std::chrono::milliseconds kLastStopPoll{50};

  void shutdown() override;
  // `io` is this registry's context: remembers it and, the first time, posts the probe there
  // (mark_run), unless a drive or run call named it first. Under the mutex.
  void learn_io(boost::asio::io_context& io);
  // Claims every linked op that no other party claimed yet and moves the epoch (waking the
  // drops that wait on it); the caller fails each.
  std::vector<std::shared_ptr<OpBase>> claim_all();

  // The context as an io_context (whose stopped() tells), once an executor showed it is one
  // (execution_context is not polymorphic), or a drive / run call named it: set under mu_ by
  // learn_io (after it posted the probe) or runner_enter (release; always the same value);
  // read (acquire) by of(), stopped(), emit_if_idle and wait; the acquire in of() sees the
  // probe posted before the operation is initiated.
  std::atomic<boost::asio::io_context*> io_{nullptr};
  std::mutex mu_;
  std::condition_variable cv_;
  // The linked ops, guarded by list_lock_ (a spin lock: two uncontended critical sections per
  // operation, a few instructions each, where a pthread mutex costs far more).
  spool::detail::SpinLock list_lock_;
  OpBase* head_ = nullptr;
  // Moved (under mu_) by every stop, shutdown and runner exit; see emit_if_idle and wait.
  std::uint64_t epoch_ = 0;
  int runners_ = 0;        // drive / run calls in progress (guarded by mu_)
  bool managed_ = false;   // a drive or run call ran the context once (guarded by mu_)
  bool run_seen_ = false;  // the probe ran: a thread runs the io_context (guarded by mu_)
};

}  // namespace spool::asio::detail
