#include "spool/asio/op_state.hpp"

#include <condition_variable>
#include <mutex>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

#include "asio/driven.hpp"
#include "asio/registry.hpp"

namespace spool::asio::detail {

void OpBase::publish() noexcept {
  if (registry_) registry_->unlink(this);
  // Release: the result written before is visible to the future's acquire load in done().
  phase_.store(kDone, std::memory_order_release);
  waker_.wake();
}

bool OpBase::fail(std::exception_ptr error) noexcept {
  if (!claim()) return false;
  fail_claimed(std::move(error));
  return true;
}

void OpBase::fail_claimed(std::exception_ptr error) noexcept {
  set_error(std::move(error));
  publish();
}

bool OpBase::attach(boost::asio::any_io_executor executor) {
  executor_ = std::move(executor);
  if (!executor_) return true;  // no executor named: no registry either
  boost::asio::execution_context* ctx =
      &boost::asio::query(executor_, boost::asio::execution::context);
  OpRegistry& registry = ctx == driven_here() ? *driven_registry() : OpRegistry::of(executor_);
  if (!registry.link(this)) return false;
  registry_ = &registry;
  return true;
}

void OpBase::emit_once() noexcept {
  std::lock_guard lock(emit_mu_);
  if (emitted_ || handler_gone_.load(std::memory_order_acquire)) return;
  emitted_ = true;
  signal_.emit(boost::asio::cancellation_type::terminal);
}

void OpBase::cancel_from_drop() noexcept {
  waker_.take();  // a late handler wakes nothing
  // Nothing left to cancel once the handler ran (or was destroyed), or once the result is
  // published: the registry of a stopped context publishes after its own emit. (Claimed by
  // that registry but not published yet: the emit below waits for its emit, under emit_mu_.)
  if (handler_gone_.load(std::memory_order_acquire) || done()) return;
  if (!executor_) {
    // The initiation named no executor: the drop cancels from this thread (docs/asio.md).
    emit_once();
    return;
  }
  boost::asio::execution_context* ctx =
      &boost::asio::query(executor_, boost::asio::execution::context);
  OpRegistry& registry = *registry_;
  // This thread drives the context: cancel here, at once. So when nothing runs it (stopped;
  // run by spool only, and not now; an io_context no thread has run yet): emit_if_idle emits
  // here, under its mutex, so that no thread starts running it meanwhile.
  if (driven_here() == ctx) {
    emit_once();
    return;
  }
  const std::optional<std::uint64_t> epoch = registry.emit_if_idle([this] { emit_once(); });
  if (!epoch) return;
  // Else on the operation's executor, where its handlers run (inline if this thread runs that
  // executor now), and wait until that ran, or until the context's runners changed after the
  // read above (a stop, the last spool runner gone) or it was found stopped (a plain
  // io.run()): then nothing may ever run it, so cancel here. The queued emit, should it run
  // later, finds the op emitted. An epoch, not a count: a busy context's other cancellations
  // do not matter. The queued emit holds the op: its state outlives the drop.
  auto ran = std::make_shared<bool>(false);  // guarded by the registry's mutex
  std::shared_ptr<OpBase> self = shared_from_this();
  try {
    boost::asio::dispatch(executor_, [self, ran, &registry] {
      self->emit_once();
      registry.notify([&] { *ran = true; });
    });
  } catch (...) {
    emit_once();  // the executor refused the work (out of memory): cancel here
    return;
  }
  if (!registry.wait(*epoch, [&] { return *ran; })) emit_once();
}

}  // namespace spool::asio::detail
