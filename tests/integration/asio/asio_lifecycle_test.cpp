// spool::asio when the other side is not there: a dropped use_task future whose io_context
// nothing runs (cancelled at once, here) or whose plain io.run() is stopped while the drop
// waits for its cancellation there (the drop notices the stop), and an async_await whose
// spool runtime shuts down meanwhile or was already gone (the handler is completed with
// OperationAbandoned, on its executor, rather than destroyed uncalled).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/execution.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "spool/asio.hpp"
#include "spool/spool.hpp"

// Named, not anonymous: in a unity batch this file shares a translation unit with
// asio_test.cpp, whose helpers have the same names.
namespace spool_asio_lifecycle_test {

namespace net = boost::asio;
using spool::Task;
using spool::asio::use_task;

constexpr auto kNever = std::chrono::hours(24);  // a timer that only a cancellation ends

template <class F>
bool poll_once(F& fut) {
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  return fut.poll(cx).is_ready();
}

// The asio1 reproducer: a wait on an io_context that nothing has run, dropped by a select that
// the other branch wins. The drop hung, waiting for its cancellation to run on the io_context.
TEST(AsioDrop, NothingRunsTheIoContextSoTheDropCancelsAtOnce) {
  net::io_context io;
  net::steady_timer t(io, kNever);
  auto [tx, rx] = spool::oneshot::channel<int>();
  tx.send(1);
  auto won = spool::block_on(spool::select(t.async_wait(use_task), std::move(rx)));
  EXPECT_EQ(won.index(), 1u);
  // The wait was cancelled by the drop (the timer is still there): run() finds its aborted
  // handler and returns, where a pending wait would keep it running for ever.
  io.run();
}

// An executor of `io` that counts the functions it is given before it posts them there: the
// test learns that the drop handed its cancellation to the io_context and waits for it.
class CountingExecutor {
 public:
  CountingExecutor(net::io_context& io, std::atomic<int>& handed) noexcept
      : io_(&io), handed_(&handed) {}
  template <class F>
  void execute(F&& f) const {
    handed_->fetch_add(1);  // seq_cst (the default): a count the test thread polls
    net::post(io_->get_executor(), std::forward<F>(f));
  }
  net::io_context& query(net::execution::context_t) const noexcept { return *io_; }
  static constexpr net::execution::blocking_t query(net::execution::blocking_t) noexcept {
    return net::execution::blocking.never;
  }
  CountingExecutor require(net::execution::blocking_t::never_t) const noexcept { return *this; }
  friend bool operator==(const CountingExecutor& a, const CountingExecutor& b) noexcept {
    return a.io_ == b.io_;
  }
  friend bool operator!=(const CountingExecutor& a, const CountingExecutor& b) noexcept {
    return a.io_ != b.io_;
  }

 private:
  net::io_context* io_;
  std::atomic<int>* handed_;
};

// An operation on CountingExecutor that only a cancellation would end: it counts the emits of
// its cancellation slot and keeps its handler (in `kept`) uncalled.
struct CountedCancellationInit {
  CountingExecutor executor;
  std::atomic<int>* cancels;
  std::shared_ptr<void>* kept;
  CountingExecutor get_executor() const noexcept { return executor; }
  template <class Handler>
  void operator()(Handler&& handler) const {
    auto slot = net::get_associated_cancellation_slot(handler);
    slot.assign([c = cancels](net::cancellation_type_t) { c->fetch_add(1); });
    *kept = std::make_shared<std::decay_t<Handler>>(std::forward<Handler>(handler));
  }
};

// The asio3 reproducer, without its sleeps: an io_context run by a plain io.run(), busy in a
// handler, is stopped while a drop waits for its cancellation there. The drop notices the stop
// (io_context::stopped()) and cancels the operation itself; it waited for ever.
TEST(AsioDrop, PlainRunStoppedWhileTheDropWaitsThenTheDropCancels) {
  net::io_context io;
  auto guard = net::make_work_guard(io);
  std::thread io_thread([&] { io.run(); });
  // A first operation: the bridge has now seen a thread run this io_context.
  spool::block_on(net::post(io, use_task));
  std::promise<void> entered;
  std::promise<void> release;
  net::post(io, [&] {
    entered.set_value();
    release.get_future().wait();
  });
  entered.get_future().wait();  // the io thread is busy until released
  std::atomic<int> handed{0};
  std::atomic<int> cancels{0};
  std::shared_ptr<void> kept;
  std::thread dropper([&] {
    auto op = net::async_initiate<const spool::asio::use_task_t&, void()>(
        CountedCancellationInit{CountingExecutor(io, handed), &cancels, &kept}, use_task);
    EXPECT_FALSE(poll_once(op));
  });  // the drop queues its cancellation behind the busy handler and waits for it
  while (handed.load() == 0) std::this_thread::yield();
  io.stop();
  dropper.join();
  EXPECT_EQ(cancels.load(), 1);  // cancelled once, by the drop, on its own thread
  release.set_value();
  io_thread.join();
  kept.reset();  // the handler, uncalled: Asio's shutdown of `io` would destroy it the same way
}

// A future that is never ready and tells `polled` at its first poll.
class PendingSpy {
 public:
  explicit PendingSpy(std::promise<void>& polled) noexcept : polled_(&polled) {}
  spool::Poll<int> poll(spool::Context&) {
    if (polled_ != nullptr) std::exchange(polled_, nullptr)->set_value();
    return spool::pending;
  }

 private:
  std::promise<void>* polled_;
};

Task<int> forty_two() { co_return 42; }

// Awaits `fut` through async_await and says how it ended. The promise is a parameter, so in
// the coroutine's frame: a frame destroyed without being resumed breaks it.
template <class F>
net::awaitable<void> await_and_tell(spool::Handle handle, F fut, std::promise<std::string> out) {
  try {
    int v = co_await spool::asio::async_await(handle, std::move(fut), net::use_awaitable);
    out.set_value("value " + std::to_string(v));
  } catch (const spool::asio::OperationAbandoned&) {
    out.set_value("abandoned");
  } catch (...) {
    out.set_value("another error");
  }
}

// The asio2 reproducer: the runtime is dropped while an awaitable waits for its future there.
// The awaitable's frame was destroyed unresumed (a broken promise here).
TEST(AsioAwait, RuntimeShutdownCompletesTheHandlerWithOperationAbandoned) {
  net::io_context io;
  auto guard = net::make_work_guard(io);
  std::optional<spool::Runtime> rt(spool::Builder::multi_thread().worker_threads(2).build());
  std::promise<void> polled;
  std::promise<std::string> outcome;
  auto result = outcome.get_future();
  net::co_spawn(io, await_and_tell(rt->handle(), PendingSpy(polled), std::move(outcome)),
                net::detached);
  std::thread io_thread([&] { io.run(); });
  polled.get_future().wait();  // the future runs on the runtime
  rt.reset();
  EXPECT_EQ(result.get(), "abandoned");
  guard.reset();
  io_thread.join();
}

// asio1's async_await_dead: the runtime was gone before the operation began; run() returned
// at once with the awaitable destroyed.
TEST(AsioAwait, GoneRuntimeCompletesTheHandlerWithOperationAbandoned) {
  std::optional<spool::Runtime> rt(spool::Builder::multi_thread().worker_threads(1).build());
  spool::Handle handle = rt->handle();
  rt.reset();
  net::io_context io;
  std::promise<std::string> outcome;
  auto result = outcome.get_future();
  net::co_spawn(io, await_and_tell(handle, forty_two(), std::move(outcome)), net::detached);
  io.run();
  EXPECT_EQ(result.get(), "abandoned");
}

}  // namespace spool_asio_lifecycle_test
