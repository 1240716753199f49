// Sockets under executors that do not drive spool's driver: a hand-written executor with no
// reactor slot (the driver's background thread dispatches the I/O events), spool::block_on
// (the socket's driver parks in it), and a socket of runtime A used by a task of runtime B.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <string_view>
#include <thread>

#include "spool/spool.hpp"
#include "support/net.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Task;
using spool::net::TcpListener;
using spool::net::TcpStream;
using spool_time_test::run_foreign;

// Outside every runtime, a twenty-line executor with no reactor slot: a socket and a timer
// in one future, both driven by the process-wide driver's background thread. The peer
// echoes only once the future has waited (its read cannot find the reply ready), so the
// driver is exercised on every run.
TEST(NetForeignExecutor, ASocketAndATimerWithoutAReactorSlot) {
  auto listener = TcpListener::bind("127.0.0.1:0");
  // Counted by run_foreign (seq_cst increments, then notify); waited on by the peer.
  std::atomic<int> pending{0};
  // The peer: a plain thread with spool::block_on (its own executor, parking in the driver).
  std::thread peer([&] {
    spool::block_on([](TcpListener& l, std::atomic<int>& waited) -> Task<void> {
      auto [s, addr] = co_await l.accept();
      std::string msg(26, '\0');
      co_await s.read_exact(msg);
      waited.wait(0);  // the client has returned pending at least once
      co_await s.write_all(msg);
    }(listener, pending));
  });
  auto client = [](spool::net::SocketAddr addr) -> Task<std::string> {
    TcpStream s = co_await TcpStream::connect(addr);
    co_await spool::sleep(1ms);
    co_await s.write_all(std::string_view("over the background driver"));
    std::string in(26, '\0');
    co_await s.read_exact(in);
    co_return in;
  }(listener.local_addr());
  EXPECT_EQ(run_foreign(client, nullptr, &pending), "over the background driver");
  EXPECT_GT(pending.load(), 0);
  peer.join();
}

// A listener of runtime A accepted on by a task of runtime B: A's workers dispatch its
// events, and B's task is woken through its waker.
TEST(NetForeignExecutor, ASocketOfOneRuntimeUsedByAnotherRuntimesTask) {
  auto a = spool::Builder::multi_thread().worker_threads(1).build();
  auto b = spool::Builder::current_thread().build();
  auto listener =
      a.block_on([]() -> Task<TcpListener> { co_return TcpListener::bind("127.0.0.1:0"); }());
  auto accepted = b.spawn([](TcpListener& l) -> Task<std::string> {
    auto [s, peer] = co_await l.accept();
    std::string in(5, '\0');
    co_await s.read_exact(in);
    co_return in;
  }(listener));
  a.block_on([](spool::net::SocketAddr addr) -> Task<void> {
    TcpStream s = co_await TcpStream::connect(addr);
    co_await s.write_all(std::string_view("hello"));
  }(listener.local_addr()));
  EXPECT_EQ(b.block_on(std::move(accepted)), "hello");
}

}  // namespace
