#include "asio/registry.hpp"

#include <boost/asio/execution/context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/strand.hpp>

#include "spool/asio/errors.hpp"

namespace spool::asio::detail {

boost::asio::execution_context::id OpRegistry::id;

OpRegistry::OpRegistry(boost::asio::execution_context& ctx)
    : boost::asio::execution_context::service(ctx) {}

namespace {

// The io_context behind `executor`: an io_context's executor, or a strand of one (of any
// depth, through any_io_executor); null for any other executor.
boost::asio::io_context* io_context_of(const boost::asio::any_io_executor& executor) {
  using IoExecutor = boost::asio::io_context::executor_type;
  if (const auto* e = executor.target<IoExecutor>()) return &e->context();
  if (const auto* s = executor.target<boost::asio::strand<IoExecutor>>()) {
    return &s->get_inner_executor().context();
  }
  if (const auto* s = executor.target<boost::asio::strand<boost::asio::any_io_executor>>()) {
    return io_context_of(s->get_inner_executor());
  }
  return nullptr;
}

}  // namespace

OpRegistry& OpRegistry::of(const boost::asio::any_io_executor& executor) {
  boost::asio::execution_context& ctx =
      boost::asio::query(executor, boost::asio::execution::context);
  auto& registry = boost::asio::use_service<OpRegistry>(ctx);
  if (registry.io_.load(std::memory_order_acquire) == nullptr) {
    if (boost::asio::io_context* io = io_context_of(executor)) registry.learn_io(*io);
  }
  return registry;
}

void OpRegistry::learn_io(boost::asio::io_context& io) {
  // Under the mutex, and io_ stored after the post: an operation that finds io_ set (or waits
  // here for it) is initiated after the probe was queued, so its handlers run after the probe.
  std::lock_guard lock(mu_);
  if (io_.load(std::memory_order_relaxed) != nullptr) return;  // another op, or drive / run
  // Once per io_context, so that a drop can tell "nothing has run it yet" (cancel at once)
  // from "a thread runs it" (wait for it there). The io_context counts it as one more
  // handler run. The registry outlives it: Asio destroys queued handlers before services.
  try {
    boost::asio::post(io, [this] { mark_run(); });
  } catch (...) {
    run_seen_ = true;  // out of memory: take it to be run (a drop then waits for it, or its stop)
  }
  io_.store(&io, std::memory_order_release);
}

void OpRegistry::mark_run() {
  std::lock_guard lock(mu_);
  run_seen_ = true;
}

bool OpRegistry::link(OpBase* op) {
  std::lock_guard lock(list_lock_);
  // Under the lock that claim_all takes after the stop: an op linked before it is failed by
  // it; one that comes after sees the stop here.
  if (stopped()) return false;
  op->prev_ = nullptr;
  op->next_ = head_;
  if (head_) head_->prev_ = op;
  head_ = op;
  return true;
}

void OpRegistry::unlink(OpBase* op) noexcept {
  std::lock_guard lock(list_lock_);
  if (op->prev_) {
    op->prev_->next_ = op->next_;
  } else if (head_ == op) {
    head_ = op->next_;
  }
  if (op->next_) op->next_->prev_ = op->prev_;
  op->prev_ = op->next_ = nullptr;
}

void OpRegistry::runner_enter(boost::asio::io_context& io) {
  std::lock_guard lock(mu_);
  io_.store(&io, std::memory_order_release);
  ++runners_;
  managed_ = true;
}

void OpRegistry::runner_exit() {
  {
    std::lock_guard lock(mu_);
    --runners_;
    ++epoch_;
  }
  cv_.notify_all();
}

std::vector<std::shared_ptr<OpBase>> OpRegistry::claim_all() {
  std::vector<std::shared_ptr<OpBase>> claimed;
  {
    std::lock_guard lock(list_lock_);
    // A linked op's handler is alive, and holds it: shared_from_this is valid here.
    for (OpBase* op = head_; op != nullptr; op = op->next_) {
      if (op->claim()) claimed.push_back(op->shared_from_this());
    }
  }
  {
    std::lock_guard lock(mu_);
    ++epoch_;
  }
  cv_.notify_all();
  return claimed;
}

void OpRegistry::fail_stopped() {
  auto error = std::make_exception_ptr(IoContextStopped(
      "spool::asio::use_task: the io_context was stopped while a task waited for this "
      "operation; its completion would come only after a restart (the operation is cancelled)"));
  for (auto& op : claim_all()) {
    op->emit_once();  // nothing runs the stopped context: its cancellation runs here
    op->fail_claimed(error);
  }
}

void OpRegistry::shutdown() {
  auto error = std::make_exception_ptr(OperationAbandoned(
      "spool::asio::use_task: the io_context was shut down (destroyed) while a task waited for "
      "this operation"));
  for (auto& op : claim_all()) op->fail_claimed(error);
}

}  // namespace spool::asio::detail
