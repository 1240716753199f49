// TCP on both runtime flavours: accept / connect / read / write / shutdown, the addresses,
// partial reads and writes of 8 MB, vectored writes, split halves, 1,000 connections.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "spool/spool.hpp"
#include "support/net.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;
using spool::net::SocketAddr;
using spool::net::TcpListener;
using spool::net::TcpStream;
using spool_net_test::echo;
using spool_net_test::pattern;
using spool_net_test::serve_echo;

class Tcp : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(Tcp);

TEST_P(Tcp, EchoRoundTripAndAddresses) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    const SocketAddr addr = listener.local_addr();
    EXPECT_EQ(addr.ip(), "127.0.0.1");
    EXPECT_NE(addr.port(), 0);
    auto server = spool::spawn(serve_echo(listener, 1));
    TcpStream s = co_await TcpStream::connect(addr);
    EXPECT_EQ(s.peer_addr(), addr);
    s.set_nodelay(true);
    EXPECT_TRUE(s.nodelay());
    for (int i = 0; i < 100; ++i) {
      const std::string out = "message " + std::to_string(i);
      std::string in(out.size(), '\0');
      co_await s.write_all(out);
      EXPECT_EQ(co_await s.read_exact(in), out.size());
      EXPECT_EQ(in, out);
    }
    co_await server;
  }());
}

TEST_P(Tcp, ConnectByHostNameResolvesAndTriesEachAddress) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    const SocketAddr addr = listener.local_addr();
    auto server = spool::spawn(serve_echo(listener, 1));
    // Where "localhost" resolves to ::1 first (nothing listens there), the next one accepts.
    TcpStream s = co_await TcpStream::connect("localhost:" + std::to_string(addr.port()));
    EXPECT_EQ(s.peer_addr(), addr);
    std::array<char, 5> in{};
    co_await s.write_all(std::string_view("hello"));
    co_await s.read_exact(in);
    EXPECT_EQ(std::string_view(in.data(), in.size()), "hello");
    co_await server;
  }());
}

TEST_P(Tcp, ConnectToAListTriesEachAddressInTurn) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    const SocketAddr addr = listener.local_addr();
    const SocketAddr closed = spool_net_test::closed_port(SOCK_STREAM);
    auto server = spool::spawn(serve_echo(listener, 1));
    // Named lists: g++ 12 cannot keep a braced list alive across a co_await.
    std::vector<SocketAddr> closed_then_open;
    closed_then_open.push_back(closed);
    closed_then_open.push_back(addr);
    const std::vector<SocketAddr> both_closed(2, closed);
    TcpStream s = co_await TcpStream::connect(closed_then_open);
    EXPECT_EQ(s.peer_addr(), addr);  // refused by the first, accepted by the second
    co_await server;
    try {
      (void)co_await TcpStream::connect(both_closed);
      ADD_FAILURE() << "connected where nothing listens";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::connection_refused) << e.what();
      EXPECT_NE(std::string(e.what()).find(closed.to_string()), std::string::npos) << e.what();
    }
    try {
      (void)co_await TcpStream::connect(std::vector<SocketAddr>());
      ADD_FAILURE() << "an empty list was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("no address"), std::string::npos) << e.what();
    }
  }());
}

TEST_P(Tcp, ConnectByTextWhereNothingListensNamesTheText) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    const std::string text =
        "127.0.0.1:" + std::to_string(spool_net_test::closed_port(SOCK_STREAM).port());
    try {
      (void)co_await TcpStream::connect(text);
      ADD_FAILURE() << "connected where nothing listens";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::connection_refused) << e.what();
      EXPECT_NE(std::string(e.what()).find("connect to " + text), std::string::npos) << e.what();
    }
  }());
}

TEST_P(Tcp, AcceptGivesThePeersAddress) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    auto client = spool::spawn([](SocketAddr a) -> Task<SocketAddr> {
      TcpStream s = co_await TcpStream::connect(a);
      co_return s.local_addr();
    }(listener.local_addr()));
    auto [stream, peer] = co_await listener.accept();
    EXPECT_EQ(peer, co_await client);
    EXPECT_EQ(stream.peer_addr(), peer);
  }());
}

TEST_P(Tcp, ShutdownWriteEndsThePeersStream) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    TcpStream client = co_await TcpStream::connect(listener.local_addr());
    auto [server, peer] = co_await listener.accept();
    co_await client.write_all(std::string_view("last words"));
    client.shutdown(SHUT_WR);
    std::string got;
    std::array<char, 3> buf{};
    for (;;) {
      const std::size_t n = co_await server.read(buf);
      if (n == 0) break;
      got.append(buf.data(), n);
    }
    EXPECT_EQ(got, "last words");
    // The other direction still works.
    co_await server.write_all(std::string_view("reply"));
    std::string in(5, '\0');
    co_await client.read_exact(in);
    EXPECT_EQ(in, "reply");
  }());
}

// 8 MB each way at once, through the kernel's much smaller socket buffers: every write and
// read is partial many times over, and each side must wait for the other.
TEST_P(Tcp, EightMegabytesEachWayInPartialReadsAndWrites) {
  constexpr std::size_t kSize = 8u << 20;
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    auto server = spool::spawn(serve_echo(listener, 1));
    TcpStream s = co_await TcpStream::connect(listener.local_addr());
    auto [rd, wr] = std::move(s).into_split();
    const auto out = pattern(kSize);
    auto writer = spool::spawn(
        [](TcpStream::OwnedWriteHalf half, const std::vector<std::uint8_t>& data) -> Task<void> {
          // A local, so that it is destroyed when the body ends, not with the frame (which
          // lives until the JoinHandle is awaited): that ends the echo server's stream.
          TcpStream::OwnedWriteHalf w = std::move(half);
          EXPECT_EQ(co_await w.write_all(data), data.size());
        }(std::move(wr), out));
    std::vector<std::uint8_t> in(kSize);
    std::size_t reads = 0;
    for (std::size_t got = 0; got < kSize; ++reads) {
      const std::size_t n = co_await rd.read(std::span(in).subspan(got));
      if (n == 0) {
        ADD_FAILURE() << "the echo ended after " << got << " bytes";
        break;
      }
      got += n;
    }
    EXPECT_GT(reads, 1u);
    EXPECT_TRUE(in == out) << "the echoed bytes differ";
    std::array<char, 1> more{};
    EXPECT_EQ(co_await rd.read(more), 0u);
    co_await writer;
    co_await server;
  }());
}

TEST_P(Tcp, ReadExactThrowsUnexpectedEofWhenTheStreamEndsFirst) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    TcpStream client = co_await TcpStream::connect(listener.local_addr());
    auto [server, peer] = co_await listener.accept();
    co_await server.write_all(std::string_view("abc"));
    server.shutdown(SHUT_WR);
    std::string in(10, '\0');
    try {
      co_await client.read_exact(in);
      ADD_FAILURE() << "read_exact returned";
    } catch (const spool::net::UnexpectedEof& e) {
      EXPECT_NE(std::string(e.what()).find("3 of the 10 bytes"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("peer " + listener.local_addr().to_string()),
                std::string::npos)
          << e.what();
    }
  }());
}

// A read of an empty buffer gives 0 at once, with nothing queued, on the calling thread and
// on a worker (on io_uring, where reads run on the worker's ring); then the stream works on.
TEST_P(Tcp, AnEmptyReadGivesZeroAtOnce) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [client, server] = co_await spool_net_test::tcp_pair();
    co_await spool_net_test::empty_reads_give_zero_at_once(server);
    co_await spool::spawn([](TcpStream& s) -> Task<void> {
      co_await spool_net_test::empty_reads_give_zero_at_once(s);
    }(server));
    co_await client.write_all(std::string_view("after"));
    std::string in(5, '\0');
    EXPECT_EQ(co_await server.read_exact(in), 5u);
    EXPECT_EQ(in, "after");
  }());
}

TEST_P(Tcp, VectoredWriteSendsTheBuffersInOrder) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    TcpStream client = co_await TcpStream::connect(listener.local_addr());
    auto [server, peer] = co_await listener.accept();
    const std::string a = "*2\r\n", b = "$3\r\nGET\r\n", c = "$1\r\nk\r\n";
    const std::array<iovec, 3> bufs = {spool::net::io_buffer(a), spool::net::io_buffer(b),
                                       spool::net::io_buffer(c)};
    EXPECT_EQ(co_await client.write_vectored(bufs), a.size() + b.size() + c.size());
    std::string in(a.size() + b.size() + c.size(), '\0');
    co_await server.read_exact(in);
    EXPECT_EQ(in, a + b + c);
  }());
}

// Borrowed halves: one child reads while the other writes, on the same stream.
TEST_P(Tcp, BorrowedHalvesReadAndWriteConcurrently) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    auto server = spool::spawn(serve_echo(listener, 1));
    TcpStream s = co_await TcpStream::connect(listener.local_addr());
    auto [rd, wr] = s.split();
    const auto out = pattern(1 << 20, 7);
    std::vector<std::uint8_t> in(out.size());
    auto [sent, got] = co_await spool::join(
        [](TcpStream::WriteHalf& w, const std::vector<std::uint8_t>& d) -> Task<std::size_t> {
          co_return co_await w.write_all(d);
        }(wr, out),
        [](TcpStream::ReadHalf& r, std::vector<std::uint8_t>& d) -> Task<std::size_t> {
          co_return co_await r.read_exact(d);
        }(rd, in));
    EXPECT_EQ(sent, out.size());
    EXPECT_EQ(got, out.size());
    EXPECT_TRUE(in == out);
    s.shutdown(SHUT_WR);
    co_await server;
  }());
}

// 1,000 connections open at once through one listener, each echoing its own message.
TEST_P(Tcp, AThousandConcurrentConnections) {
  constexpr int kClients = 1000;
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  if (lim.rlim_cur < 2 * kClients + 64) {
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, 2 * kClients + 64);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
  }
  ASSERT_GE(lim.rlim_cur, rlim_t{2 * kClients + 64}) << "the hard RLIMIT_NOFILE is too low";
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    auto server = spool::spawn(serve_echo(listener, kClients));
    std::vector<TcpStream> streams;
    for (int i = 0; i < kClients; ++i) {
      streams.push_back(co_await TcpStream::connect(listener.local_addr()));
    }
    EXPECT_GE(spool::Handle::current().metrics().io_registrations, std::size_t{kClients});
    std::vector<spool::JoinHandle<void>> clients;
    for (int i = 0; i < kClients; ++i) {
      clients.push_back(spool::spawn([](TcpStream s, int id) -> Task<void> {
        const std::string out = "client " + std::to_string(id);
        std::string in(out.size(), '\0');
        co_await s.write_all(out);
        co_await s.read_exact(in);
        EXPECT_EQ(in, out);
      }(std::move(streams[static_cast<std::size_t>(i)]), i)));
    }
    for (auto& c : clients) co_await c;
    co_await server;
  }());
}

TEST(SocketAddr, ParsesAndPrintsBothFamilies) {
  const auto v4 = SocketAddr::parse("127.0.0.1:6379");
  EXPECT_FALSE(v4.is_ipv6());
  EXPECT_EQ(v4.port(), 6379);
  EXPECT_EQ(v4.to_string(), "127.0.0.1:6379");
  const auto v6 = SocketAddr::parse("[::1]:80");
  EXPECT_TRUE(v6.is_ipv6());
  EXPECT_EQ(v6.ip(), "::1");
  EXPECT_EQ(v6.to_string(), "[::1]:80");
  EXPECT_EQ(SocketAddr("::1", 80), v6);
}

TEST(SocketAddr, RefusesWhatIsNotANumericAddressWithAPort) {
  for (const char* bad : {"localhost:80", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "::1:80",
                          "127.0.0.1:8x", "[::1]80"}) {
    try {
      (void)SocketAddr::parse(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

}  // namespace
