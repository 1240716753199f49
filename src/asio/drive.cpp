#include "spool/asio/drive.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "asio/driven.hpp"
#include "asio/registry.hpp"

namespace spool::asio {

namespace detail {

boost::asio::execution_context*& driven_here() noexcept {
  thread_local boost::asio::execution_context* ctx = nullptr;
  return ctx;
}

OpRegistry*& driven_registry() noexcept {
  thread_local OpRegistry* registry = nullptr;
  return registry;
}

namespace {

// Fails the use_task operations waiting on a stopped `io` (if it has any: no registry is
// made for that).
void fail_if_stopped(boost::asio::io_context& io) {
  if (io.stopped() && boost::asio::has_service<OpRegistry>(io)) {
    boost::asio::use_service<OpRegistry>(io).fail_stopped();
  }
}

// The reactor hook of drive(): parks in io.run_one(). Only the driving thread parks.
class DriveHook final : public ReactorHook {
 public:
  explicit DriveHook(boost::asio::io_context& io) : io_(io), guard_(io.get_executor()) {}

  void park(std::optional<std::chrono::nanoseconds> timeout) override {
    // An unpark that came before this park (sticky): return at once.
    if (token_.exchange(false, std::memory_order_acquire)) return;
    if (io_.stopped()) {
      fail_if_stopped(io_);
      park_stopped(timeout);
      return;
    }
    if (timeout) {
      io_.run_one_for(*timeout);
    } else {
      io_.run_one();
    }
    // run_one returned: any unpark made meanwhile is answered (the caller re-checks its
    // wake flag); one from another thread also posted a no-op, which the next run_one
    // may run (a spurious return).
    token_.store(false, std::memory_order_relaxed);
    if (io_.stopped()) fail_if_stopped(io_);
  }

  void unpark() noexcept override {
    // seq_cst, as park_stopped's store of sleeping_ and its exchange of token_ (Dekker): one
    // of the two sides sees the other's store. Also releases to park's acquire exchange.
    token_.store(true, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst)) {
      std::lock_guard lock(mu_);
      cv_.notify_one();
      return;
    }
    // On the driving thread this is a handler inside run_one waking its task (the parker
    // calls the hook's unpark only while parked): run_one returns after it anyway. From
    // another thread, a no-op handler makes run_one return, unless drive is over.
    if (driven_here() == &io_) return;
    std::lock_guard lock(close_mu_);
    if (closed_) return;
    try {
      boost::asio::post(io_, [] {});
    } catch (...) {
      // Out of memory: the token stays; run_one returns at its next event.
    }
  }

  // drive() returns: a clone of its waker may outlive it (kept by a pending operation), and
  // with it this hook, which must then neither keep `io` busy nor touch it.
  void close() noexcept {
    std::lock_guard lock(close_mu_);
    closed_ = true;
    guard_.reset();
  }

 private:
  // `io` is stopped: run_one would return at once, so wait for an unpark (or the timeout).
  void park_stopped(std::optional<std::chrono::nanoseconds> timeout) {
    std::unique_lock lock(mu_);
    sleeping_.store(true, std::memory_order_seq_cst);  // see unpark
    auto woken = [&] { return token_.exchange(false, std::memory_order_seq_cst); };
    if (timeout) {
      cv_.wait_for(lock, *timeout, woken);
    } else {
      cv_.wait(lock, woken);
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }

  boost::asio::io_context& io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  // The sticky unpark: set by unpark (release), taken by park (acquire exchange).
  std::atomic<bool> token_{false};
  // True while the driving thread waits in park_stopped (written by it, under mu_, seq_cst;
  // read seq_cst by unpark, which then notifies under mu_).
  std::atomic<bool> sleeping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::mutex close_mu_;  // guards closed_ and the use of io_ by other threads' unparks
  bool closed_ = false;
};

}  // namespace

DriveScope::DriveScope(boost::asio::io_context& io)
    : hook_(std::make_shared<DriveHook>(io)),
      registry_(&boost::asio::use_service<OpRegistry>(io)),
      previous_(driven_here()),
      previous_registry_(driven_registry()) {
  static_cast<OpRegistry*>(registry_)->runner_enter(io);
  driven_here() = &io;
  driven_registry() = static_cast<OpRegistry*>(registry_);
}

DriveScope::~DriveScope() {
  static_cast<DriveHook&>(*hook_).close();
  driven_here() = static_cast<boost::asio::execution_context*>(previous_);
  driven_registry() = static_cast<OpRegistry*>(previous_registry_);
  static_cast<OpRegistry*>(registry_)->runner_exit();
}

}  // namespace detail

std::size_t run(boost::asio::io_context& io) {
  auto& registry = boost::asio::use_service<detail::OpRegistry>(io);
  registry.runner_enter(io);
  // Exits as a runner also when a handler throws out of run().
  struct Exit {
    detail::OpRegistry& registry;
    ~Exit() { registry.runner_exit(); }
  } exit{registry};
  const std::size_t n = io.run();
  detail::fail_if_stopped(io);
  return n;
}

}  // namespace spool::asio
