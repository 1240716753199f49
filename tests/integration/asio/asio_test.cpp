// spool::asio (the Boost.Asio bridge): use_task on timers, sockets, composed and executor-less
// operations, with the io_context driven by the task's thread (drive) or run on its own
// thread (spool::asio::run) under a spool runtime; errors and an Asio cancellation reaching
// the task; a dropped future cancelling its operation before the drop returns (the I/O
// object destroyed right after: ASan), also on a strand; io.stop() under several waiting tasks
// and before an operation starts (IoContextStopped), a destroyed io_context
// (OperationAbandoned); drive's own contract (nothing left installed, nesting refused, a
// throwing handler); 10^5 bridged operations with nothing leaked; a cross-thread race of
// completions and cancellations (TSan); the RuntimeExecutor (post, co_spawn of an
// asio::awaitable) and async_await (a spool future's value and exception in an awaitable, and
// an Asio cancellation dropping the spool future).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

#include "spool/asio.hpp"
#include "spool/from_callback.hpp"
#include "spool/spool.hpp"

namespace {

namespace net = boost::asio;
using spool::Task;
using spool::asio::use_task;
using namespace std::chrono_literals;

constexpr auto kNever = std::chrono::hours(24);  // a timer that only a cancellation ends

// An io_context run by its own thread (spool::asio::run), kept busy by a work guard until
// the end of the test.
class IoThread {
 public:
  IoThread() : guard_(io.get_executor()), thread_([this] { spool::asio::run(io); }) {}
  ~IoThread() { join(); }
  // Lets run() return once the io_context has nothing left to do, and waits for it: a test
  // whose operation was not cancelled would hang here.
  void join() {
    guard_.reset();
    if (thread_.joinable()) thread_.join();
  }
  net::io_context io;

 private:
  net::executor_work_guard<net::io_context::executor_type> guard_;
  std::thread thread_;
};

using Socket = net::local::stream_protocol::socket;

std::pair<Socket, Socket> socket_pair(net::io_context& io) {
  Socket a(io);
  Socket b(io);
  net::local::connect_pair(a, b);
  return {std::move(a), std::move(b)};
}

// Polls `fut` once with a no-op waker (it starts its operation) and returns whether it was ready.
template <class F>
bool poll_once(F& fut) {
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  return fut.poll(cx).is_ready();
}

TEST(AsioUseTask, TimerAndSocketUnderDrive) {
  net::io_context io;
  auto pair = socket_pair(io);  // not a structured binding: clang 14 cannot capture one
  Socket& a = pair.first;
  Socket& b = pair.second;
  std::string got = spool::asio::drive(io, [&]() -> Task<std::string> {
    net::steady_timer t(io, 1ms);
    co_await t.async_wait(use_task);
    const std::string msg = "ping";
    std::size_t sent = co_await net::async_write(a, net::buffer(msg), use_task);
    EXPECT_EQ(sent, 4u);
    std::array<char, 4> buf{};
    std::size_t n = co_await net::async_read(b, net::buffer(buf), use_task);
    co_return std::string(buf.data(), n);
  }());
  EXPECT_EQ(got, "ping");
}

TEST(AsioUseTask, ErrorCodeIsThrownAsSystemError) {
  net::io_context io;
  auto [a, b] = socket_pair(io);
  b.close();
  std::array<char, 1> buf{};
  try {
    spool::asio::drive(io, a.async_read_some(net::buffer(buf), use_task));
    FAIL() << "the read of a closed peer returned";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), net::error::eof);
  }
}

TEST(AsioUseTask, AsioCancellationReachesTheTask) {
  net::io_context io;
  net::steady_timer t(io, kNever);
  net::post(io, [&] { t.cancel(); });
  try {
    spool::asio::drive(io, t.async_wait(use_task));
    FAIL() << "a cancelled wait returned";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), net::error::operation_aborted);
  }
}

TEST(AsioUseTask, ExecutorlessInitiationCompletingInline) {
  // No executor named (no registry, cancel from the dropping thread), and the handler runs
  // inside the initiation, on the polling thread: ready at the first poll.
  auto fut = net::async_initiate<const spool::asio::use_task_t&, void(int)>(
      [](auto handler, int v) { std::move(handler)(v * 2); }, use_task, 21);
  int got = 0;
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  auto p = fut.poll(cx);
  ASSERT_TRUE(p.is_ready());
  got = p.value();
  EXPECT_EQ(got, 42);
}

TEST(AsioUseTask, OwnThreadUnderARuntime) {
  IoThread io_thread;
  auto [a, b] = socket_pair(io_thread.io);
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto reader = rt.spawn([](Socket& s) -> Task<std::string> {
    std::array<char, 5> buf{};
    co_await net::async_read(s, net::buffer(buf), use_task);
    co_return std::string(buf.data(), buf.size());
  }(b));
  auto writer = rt.spawn([](Socket& s) -> Task<void> {
    const std::string msg = "hello";
    co_await net::async_write(s, net::buffer(msg), use_task);
  }(a));
  spool::block_on(std::move(writer));
  EXPECT_EQ(spool::block_on(std::move(reader)), "hello");
}

// The first cold review's HIGH finding: the dropped future's cancellation must have run before
// the drop returns, for the task destroys the timer next (heap-use-after-free under ASan
// otherwise), in drive mode and with the io_context on its own thread.
TEST(AsioUseTask, DropCancelsBeforeReturningThenTheTimerGoesUnderDrive) {
  net::io_context io;
  spool::asio::drive(io, [&]() -> Task<void> {
    for (int i = 0; i < 100; ++i) {
      auto t = std::make_unique<net::steady_timer>(io, kNever);
      {
        auto wait = t->async_wait(use_task);
        EXPECT_FALSE(poll_once(wait));
      }  // dropped: cancelled here
      t.reset();
      co_await spool::yield_now();  // the aborted handler runs (or is queued) meanwhile
    }
  }());
  io.restart();
  io.run();  // every wait completed (aborted): nothing pends
  SUCCEED();
}

TEST(AsioUseTask, DropCancelsBeforeReturningThenTheTimerGoesOnItsOwnThread) {
  IoThread io_thread;
  for (int i = 0; i < 100; ++i) {
    auto t = std::make_unique<net::steady_timer>(io_thread.io, kNever);
    {
      auto wait = t->async_wait(use_task);
      EXPECT_FALSE(poll_once(wait));
    }
    t.reset();
  }
  io_thread.join();  // would hang if a wait were still pending
}

TEST(AsioUseTask, DropOnAStrandOfAnyIoExecutor) {
  IoThread io_thread;
  net::strand<net::any_io_executor> strand(io_thread.io.get_executor());
  for (int i = 0; i < 100; ++i) {
    auto t = std::make_unique<net::basic_waitable_timer<std::chrono::steady_clock,
                                                        net::wait_traits<std::chrono::steady_clock>,
                                                        net::strand<net::any_io_executor>>>(strand,
                                                                                            kNever);
    {
      auto wait = t->async_wait(use_task);
      EXPECT_FALSE(poll_once(wait));
    }
    t.reset();
  }
  io_thread.join();
}

TEST(AsioUseTask, DropOfAComposedReadThenTheSocketGoes) {
  IoThread io_thread;
  for (int i = 0; i < 50; ++i) {
    auto [a, b] = socket_pair(io_thread.io);
    auto sock = std::make_unique<Socket>(std::move(b));
    std::array<char, 8> buf{};
    {
      auto read = net::async_read(*sock, net::buffer(buf), use_task);
      EXPECT_FALSE(poll_once(read));
    }
    sock.reset();
  }
  io_thread.join();
}

TEST(AsioUseTask, StopFailsEveryWaitingTaskUnderDrive) {
  net::io_context io;
  std::vector<net::steady_timer> timers;
  for (int i = 0; i < 3; ++i) timers.emplace_back(io, kNever);
  auto wait = [](net::steady_timer& t) -> Task<std::string> {
    try {
      co_await t.async_wait(use_task);
      co_return "completed";
    } catch (const spool::asio::IoContextStopped&) {
      co_return "stopped";
    }
  };
  net::post(io, [&] { io.stop(); });
  auto [r0, r1, r2] =
      spool::asio::drive(io, spool::when_all(wait(timers[0]), wait(timers[1]), wait(timers[2])));
  EXPECT_EQ(r0, "stopped");
  EXPECT_EQ(r1, "stopped");
  EXPECT_EQ(r2, "stopped");
}

TEST(AsioUseTask, StopFailsEveryWaitingTaskOnItsOwnThread) {
  IoThread io_thread;
  std::vector<net::steady_timer> timers;
  for (int i = 0; i < 4; ++i) timers.emplace_back(io_thread.io, kNever);
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::vector<spool::JoinHandle<void>> waiters;
  // Counted by each task before it waits, read by the test thread to know all wait; seq_cst
  // (the default): a count, ordered with nothing else the test reads.
  std::atomic<int> started{0};
  for (auto& t : timers) {
    waiters.push_back(rt.spawn([](net::steady_timer& t, std::atomic<int>& started) -> Task<void> {
      auto wait = t.async_wait(use_task);
      co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<void> {
        auto p = wait.poll(cx);
        if (p.is_pending()) {
          started.fetch_add(1);
          return spool::pending;
        }
        return spool::Poll<void>::ready();
      });
    }(t, started)));
  }
  while (started.load() < 4) std::this_thread::yield();  // each task's wait is registered
  io_thread.io.stop();
  for (auto& w : waiters) {
    try {
      spool::block_on(std::move(w));
      ADD_FAILURE() << "a wait completed";
    } catch (const spool::JoinError& e) {
      EXPECT_THROW(std::rethrow_exception(e.exception()), spool::asio::IoContextStopped);
    }
  }
}

TEST(AsioUseTask, OperationOnAStoppedIoContextIsNotStarted) {
  net::io_context io;
  io.stop();
  net::steady_timer t(io, kNever);
  EXPECT_THROW(spool::asio::drive(io, t.async_wait(use_task)), spool::asio::IoContextStopped);
  io.restart();
  EXPECT_EQ(io.poll(), 0u);  // nothing was started
}

TEST(AsioUseTask, DestroyedIoContextAbandonsTheOperation) {
  auto io = std::make_unique<net::io_context>();
  auto t = std::make_unique<net::steady_timer>(*io, kNever);
  auto wait = t->async_wait(use_task);
  EXPECT_FALSE(poll_once(wait));
  t.reset();  // queues the aborted completion, which nothing runs
  io.reset();
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  EXPECT_THROW(wait.poll(cx), spool::asio::OperationAbandoned);
}

// The first cold review's other HIGH finding: nothing of a finished drive stays installed.
TEST(AsioDrive, NothingStaysInstalledAfterItReturns) {
  net::io_context io;
  std::optional<spool::Callback<int>> kept;
  spool::asio::drive(io, [&]() -> Task<void> {
    auto fut = spool::from_callback<int>([&](spool::Callback<int> cb) { kept.emplace(cb); });
    EXPECT_FALSE(poll_once(fut));  // a waker of this drive's thread is now kept by the callback
    co_await spool::yield_now();
  }());
  // The work guard is gone: run() returns (it would wait forever otherwise).
  io.restart();
  io.run();
  // A later block_on on this thread parks on its own parker, and a wake from another thread
  // reaches it (not the io_context, which is idle).
  auto fut2 = spool::from_callback<int>(
      [](spool::Callback<int> cb) { std::thread([cb] { cb(5); }).detach(); });
  EXPECT_EQ(spool::block_on(std::move(fut2)), 5);
  (*kept)(1);  // the old waker: harmless
}

TEST(AsioDrive, NestedDriveIsRefused) {
  net::io_context io;
  EXPECT_THROW(spool::asio::drive(io,
                                  [&]() -> Task<void> {
                                    net::io_context inner;
                                    spool::asio::drive(inner, spool::yield_now());
                                    co_return;
                                  }()),
               spool::NestedEventLoop);
}

TEST(AsioDrive, ThrowingHandlerPropagatesAndDriveRunsAgain) {
  net::io_context io;
  net::post(io, [] { throw std::runtime_error("handler failed"); });
  net::steady_timer t(io, 1ms);
  EXPECT_THROW(spool::asio::drive(io, t.async_wait(use_task)), std::runtime_error);
  net::steady_timer t2(io, 1ms);
  spool::asio::drive(io, t2.async_wait(use_task));
}

TEST(AsioDrive, WakeFromAnotherThreadReachesRunOne) {
  net::io_context io;
  int got = spool::asio::drive(io, spool::from_callback<int>([](spool::Callback<int> cb) {
                                 std::thread([cb] { cb(8); }).detach();
                               }));
  EXPECT_EQ(got, 8);
}

// 10^5 bridged operations, half of them dropped mid-way, with nothing leaked (ASan/LSan).
TEST(AsioUseTask, HundredThousandOperationsLeakNothing) {
  net::io_context io;
  int done = spool::asio::drive(io, [&]() -> Task<int> {
    int n = 0;
    for (int i = 0; i < 50'000; ++i) {
      co_await net::post(io, use_task);
      ++n;
      net::steady_timer t(io, kNever);
      auto wait = t.async_wait(use_task);
      EXPECT_FALSE(poll_once(wait));
    }
    co_return n;
  }());
  EXPECT_EQ(done, 50'000);
  io.restart();
  io.run();
}

// Completions on the io thread racing cancellations from the workers (TSan): a timer that
// expires now (even tasks) or never (odd ones), awaited in a select against a oneshot the io
// thread completes at once, so the loser is sometimes the completed timer wait and sometimes
// the pending one; each task then destroys its timer. Every never-expiring wait must have been
// cancelled: the io thread's join would hang otherwise.
TEST(AsioUseTaskStress, CrossThreadCancellationRacesCompletion) {
  IoThread io_thread;
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::vector<spool::JoinHandle<int>> tasks;
  for (int i = 0; i < 2'000; ++i) {
    const auto expiry = i % 2 == 0 ? std::chrono::nanoseconds(0) : std::chrono::nanoseconds(kNever);
    tasks.push_back(rt.spawn([](net::io_context& io, std::chrono::nanoseconds expiry) -> Task<int> {
      auto t = std::make_unique<net::steady_timer>(io, expiry);
      auto [tx, rx] = spool::oneshot::channel<int>();
      net::post(io, [tx = std::move(tx)]() mutable { tx.send(1); });
      auto wait = t->async_wait(use_task);
      auto won = co_await spool::select(std::move(wait), std::move(rx));
      t.reset();
      co_return static_cast<int>(won.index());
    }(io_thread.io, expiry)));
  }
  int timer_wins = 0;
  for (auto& t : tasks) timer_wins += spool::block_on(std::move(t)) == 0 ? 1 : 0;
  EXPECT_LE(timer_wins, 2'000);
  io_thread.join();
}

// io.stop() on the io thread racing drops on the workers (TSan, ASan): tasks that wait on
// never-expiring timers are aborted (each drop cancels, then the task's timer is destroyed)
// while the io_context stops (the registry claims, cancels and fails the same operations).
// Every task ends, with IoContextStopped or cancelled, and nothing is used after it is freed.
TEST(AsioUseTaskStress, StopRacesDrops) {
  for (int round = 0; round < 20; ++round) {
    IoThread io_thread;
    spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
    // Counted by each task as it starts to wait, read by the test thread; seq_cst (the
    // default), a count ordered with nothing else.
    std::atomic<int> waiting{0};
    std::vector<spool::JoinHandle<void>> tasks;
    for (int i = 0; i < 50; ++i) {
      tasks.push_back(rt.spawn([](net::io_context& io, std::atomic<int>& waiting) -> Task<void> {
        net::steady_timer t(io, kNever);
        auto wait = t.async_wait(use_task);
        bool counted = false;
        co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<void> {
          auto p = wait.poll(cx);
          if (p.is_pending()) {
            if (!counted) waiting.fetch_add(1);
            counted = true;
            return spool::pending;
          }
          return spool::Poll<void>::ready();
        });
      }(io_thread.io, waiting)));
    }
    while (waiting.load() < 50) std::this_thread::yield();
    std::thread stopper([&] { net::post(io_thread.io, [&] { io_thread.io.stop(); }); });
    for (auto& t : tasks) t.abort();
    stopper.join();
    for (auto& t : tasks) {
      try {
        spool::block_on(std::move(t));
        ADD_FAILURE() << "a wait completed";
      } catch (const spool::JoinError& e) {
        if (!e.is_cancelled()) {
          EXPECT_THROW(std::rethrow_exception(e.exception()), spool::asio::IoContextStopped);
        }
      }
    }
  }
}

Task<int> add(int a, int b) {
  co_await spool::yield_now();
  co_return a + b;
}

Task<int> fails() {
  co_await spool::yield_now();
  throw std::out_of_range("spool side");
}

TEST(AsioExecutor, PostRunsTheFunctionAsARuntimeTask) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  spool::asio::RuntimeContext ctx(rt.handle());
  std::promise<bool> on_runtime;
  net::post(ctx.get_executor(),
            [&] { on_runtime.set_value(spool::Handle::try_current().has_value()); });
  EXPECT_TRUE(on_runtime.get_future().get());
  EXPECT_EQ(ctx.get_executor(), spool::asio::RuntimeExecutor(ctx));
}

TEST(AsioExecutor, CoSpawnedAwaitableAwaitsSpoolFutures) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  spool::asio::RuntimeContext ctx(rt.handle());
  const net::any_io_executor ex = ctx.get_executor();
  spool::Handle handle = rt.handle();
  auto result = net::co_spawn(
      ex,
      [handle]() -> net::awaitable<int> {
        co_await net::post(net::use_awaitable);  // a hop through the RuntimeExecutor
        EXPECT_TRUE(spool::Handle::try_current().has_value());
        int v = co_await spool::asio::async_await(handle, add(20, 22), net::use_awaitable);
        try {
          co_await spool::asio::async_await(handle, fails(), net::use_awaitable);
          ADD_FAILURE() << "the failed future returned";
        } catch (const std::out_of_range&) {
          ++v;
        }
        co_return v;
      },
      net::use_future);
  EXPECT_EQ(result.get(), 43);
}

// A future that is ready with 7 at its first poll (or never) and says when it is destroyed:
// `dropped` is stored (seq_cst) by its destructor on whichever thread drops it and loaded by
// the test after the drop it waits for.
class DropSpy {
 public:
  DropSpy(std::shared_ptr<std::atomic<bool>> dropped, bool ready)
      : dropped_(std::move(dropped)), ready_(ready) {}
  DropSpy(DropSpy&& o) noexcept : dropped_(std::move(o.dropped_)), ready_(o.ready_) {}
  DropSpy& operator=(DropSpy&&) = delete;
  ~DropSpy() {
    if (dropped_) dropped_->store(true);
  }
  spool::Poll<int> poll(spool::Context&) {
    if (ready_) return spool::Poll<int>::ready(7);
    return spool::pending;
  }

 private:
  std::shared_ptr<std::atomic<bool>> dropped_;
  bool ready_;
};

TEST(AsioAwait, HandlerRunsAfterTheFutureIsGone) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto dropped = std::make_shared<std::atomic<bool>>(false);
  std::promise<std::pair<bool, int>> outcome;
  spool::asio::async_await(rt.handle(), DropSpy(dropped, true), [&](std::exception_ptr e, int v) {
    outcome.set_value({dropped->load() && e == nullptr, v});
  });
  EXPECT_EQ(outcome.get_future().get(), std::make_pair(true, 7));
}

TEST(AsioAwait, AsioCancellationDropsTheSpoolFuture) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  auto dropped = std::make_shared<std::atomic<bool>>(false);
  net::cancellation_signal signal;
  // The error is read where the handler runs (a worker): an exception_ptr shared with the test
  // thread would be counted inside libstdc++, which TSan does not see.
  std::promise<boost::system::error_code> outcome;
  spool::asio::async_await(
      rt.handle(), DropSpy(dropped, false),
      net::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, int) {
        EXPECT_TRUE(dropped->load());  // dropped before the handler runs
        try {
          std::rethrow_exception(e);
        } catch (const boost::system::system_error& err) {
          outcome.set_value(err.code());
        } catch (...) {
          outcome.set_value({});
        }
      }));
  // The handler's executor is the system executor: its cancellation may come from here.
  signal.emit(net::cancellation_type::terminal);
  EXPECT_EQ(outcome.get_future().get(), net::error::operation_aborted);
}

}  // namespace
