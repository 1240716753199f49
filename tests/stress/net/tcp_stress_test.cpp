// Races of the I/O driver, for ThreadSanitizer: many connections whose halves are read and
// written by tasks on different workers while the thread in the driver dispatches their edges,
// sockets opened and closed while events for them may be in flight (the release queue), and
// several tasks waiting on one direction of one socket at once (the owner of its waker and
// the queued waiters). Bounded by counts, not time.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/net.hpp"
#include "support/sync.hpp"

namespace {

using spool::Task;
using spool::net::TcpListener;
using spool::net::TcpStream;
using spool_net_test::pattern;
using spool_net_test::serve_echo;

// Each connection: a writer task and a reader task on its two halves, sending messages of
// varying sizes (1 byte to 64 KB) through an echo server.
Task<void> exchange(TcpStream s, std::uint32_t seed, int messages) {
  auto [rd, wr] = std::move(s).into_split();
  std::vector<std::vector<std::uint8_t>> sent;
  for (int i = 0; i < messages; ++i) {
    sent.push_back(pattern(1 + (seed * 7919u + static_cast<std::uint32_t>(i) * 104729u) % 65536,
                           seed + static_cast<std::uint32_t>(i)));
  }
  auto writer = spool::spawn([](TcpStream::OwnedWriteHalf half,
                                const std::vector<std::vector<std::uint8_t>>& msgs) -> Task<void> {
    TcpStream::OwnedWriteHalf w = std::move(half);
    for (const auto& m : msgs) co_await w.write_all(m);
  }(std::move(wr), sent));
  for (const auto& m : sent) {
    std::vector<std::uint8_t> in(m.size());
    co_await rd.read_exact(in);
    EXPECT_TRUE(in == m);
  }
  co_await writer;
}

TEST(TcpStress, ManyConnectionsWithConcurrentHalvesOnFourWorkers) {
  constexpr int kConnections = 32;
  constexpr int kMessages = 40;
  auto rt = spool::Builder::multi_thread().worker_threads(4).build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    auto server = spool::spawn(serve_echo(listener, kConnections));
    std::vector<spool::JoinHandle<void>> clients;
    for (int c = 0; c < kConnections; ++c) {
      clients.push_back(spool::spawn(exchange(co_await TcpStream::connect(listener.local_addr()),
                                              static_cast<std::uint32_t>(c), kMessages)));
    }
    for (auto& h : clients) co_await h;
    co_await server;
  }());
  EXPECT_GT(rt.metrics().io_events, 0u);
}

// Sockets come and go while other connections keep the driver dispatching: registrations are
// freed by the thread in the driver between its waits, never while an event for them is being
// handled.
TEST(TcpStress, OpenAndCloseWhileEventsFlow) {
  constexpr int kCycles = 2000;
  auto rt = spool::Builder::multi_thread().worker_threads(4).build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    auto server = spool::spawn(serve_echo(listener, kCycles));
    std::vector<spool::JoinHandle<void>> churn;
    for (int t = 0; t < 4; ++t) {
      churn.push_back(spool::spawn([](spool::net::SocketAddr addr, int n) -> Task<void> {
        for (int i = 0; i < n; ++i) {
          TcpStream s = co_await TcpStream::connect(addr);
          const std::string out = std::to_string(i);
          co_await s.write_all(out);
          std::string in(out.size(), '\0');
          co_await s.read_exact(in);
          EXPECT_EQ(in, out);
        }  // closed here, often with the server's echo of the end still in flight
      }(listener.local_addr(), kCycles / 4)));
    }
    for (auto& h : churn) co_await h;
    co_await server;
  }());
  // Every socket is closed once the detached echo tasks have seen their ends (a leaked
  // registration hangs here, and the test's timeout reports it).
  spool_test::spin_until([&] { return rt.metrics().io_registrations == 0; });
}

// Four accept loops on one listener, on four workers: each connection wakes every waiting
// accept while accepts complete, give up their places and wait again.
TEST(TcpStress, FourAcceptLoopsOnOneListener) {
  constexpr int kLoops = 4;
  constexpr int kPerLoop = 100;
  auto rt = spool::Builder::multi_thread().worker_threads(4).build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    std::vector<spool::JoinHandle<void>> tasks;
    for (int l = 0; l < kLoops; ++l) {
      tasks.push_back(spool::spawn([](TcpListener& lis) -> Task<void> {
        for (int i = 0; i < kPerLoop; ++i) {
          auto [s, peer] = co_await lis.accept();
          co_await s.write_all(std::string("x"));
        }
      }(listener)));
      tasks.push_back(spool::spawn([](spool::net::SocketAddr addr) -> Task<void> {
        for (int i = 0; i < kPerLoop; ++i) {
          TcpStream s = co_await TcpStream::connect(addr);
          std::string in(1, '\0');
          co_await s.read_exact(in);
          EXPECT_EQ(in, "x");
        }
      }(listener.local_addr())));
    }
    for (auto& h : tasks) co_await h;
  }());
}

// Four readers of one stream, on four workers, each taking single bytes until together they
// took all: every byte goes to exactly one of them, and none waits for ever.
TEST(TcpStress, FourReadersOfOneStream) {
  constexpr int kReaders = 4;
  constexpr std::size_t kPerReader = 4000;
  auto rt = spool::Builder::multi_thread().worker_threads(4).build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    TcpStream writer = co_await TcpStream::connect(listener.local_addr());
    auto [reader, peer] = co_await listener.accept();
    std::vector<spool::JoinHandle<std::size_t>> readers;
    for (int r = 0; r < kReaders; ++r) {
      readers.push_back(spool::spawn([](TcpStream& s) -> Task<std::size_t> {
        std::size_t sum = 0;
        for (std::size_t i = 0; i < kPerReader; ++i) {
          std::array<std::uint8_t, 1> b{};
          co_await s.read_exact(b);
          sum += b[0];
        }
        co_return sum;
      }(reader)));
    }
    const std::vector<std::uint8_t> bytes = pattern(kReaders * kPerReader, 7);
    for (std::size_t off = 0; off < bytes.size(); off += 1000) {  // in bursts
      co_await writer.write_all(std::span(bytes).subspan(off, 1000));
    }
    std::size_t got = 0;
    for (auto& h : readers) got += co_await h;
    std::size_t want = 0;
    for (std::uint8_t b : bytes) want += b;
    EXPECT_EQ(got, want);
  }());
}

}  // namespace
