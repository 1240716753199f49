// UDP round trips (unconnected and connected, a refused peer) and Unix-domain stream
// sockets (listener, connect, socketpair, halves, a missing path), on both flavours.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "spool/spool.hpp"
#include "support/net.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;
using spool::net::SocketAddr;
using spool::net::UdpSocket;
using spool::net::UnixListener;
using spool::net::UnixStream;

class Udp : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(Udp);
class Unix : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(Unix);

TEST_P(Udp, SendToAndRecvFromRoundTrips) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto server = UdpSocket::bind("127.0.0.1:0");
    auto client = UdpSocket::bind("127.0.0.1:0");
    // The server answers each datagram to its sender, upper-cased.
    auto echo = spool::spawn([](UdpSocket& s) -> Task<void> {
      std::array<char, 64> buf{};
      for (int i = 0; i < 50; ++i) {
        auto [n, from] = co_await s.recv_from(buf);
        for (std::size_t k = 0; k < n; ++k) buf[k] = static_cast<char>(std::toupper(buf[k]));
        co_await s.send_to(std::string_view(buf.data(), n), from);
      }
    }(server));
    for (int i = 0; i < 50; ++i) {
      const std::string out = "datagram " + std::to_string(i);
      EXPECT_EQ(co_await client.send_to(out, server.local_addr()), out.size());
      std::array<char, 64> in{};
      auto [n, from] = co_await client.recv_from(in);
      EXPECT_EQ(from, server.local_addr());
      EXPECT_EQ(std::string_view(in.data(), n), "DATAGRAM " + std::to_string(i));
    }
    co_await echo;
  }());
}

// Each recv gives exactly one datagram, however short: the short-read shortcut of streams
// (a short read drained the socket) must not apply, or the second datagram would wait for
// an edge that never comes.
TEST_P(Udp, ConnectedSendAndRecvKeepDatagramBoundaries) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto a = UdpSocket::bind("127.0.0.1:0");
    auto b = UdpSocket::bind("127.0.0.1:0");
    a.connect(b.local_addr());
    b.connect(a.local_addr());
    EXPECT_EQ(a.peer_addr(), b.local_addr());
    for (std::string_view m : {"one", "two", "three"}) co_await a.send(m);
    for (std::string_view m : {"one", "two", "three"}) {
      std::array<char, 64> buf{};
      const std::size_t n = co_await b.recv(buf);
      EXPECT_EQ(std::string_view(buf.data(), n), m);
    }
  }());
}

TEST_P(Udp, AConnectedSocketWithoutAPeerReportsConnectionRefused) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    const SocketAddr nobody = spool_net_test::closed_port(SOCK_DGRAM);
    auto s = UdpSocket::bind("127.0.0.1:0");
    s.connect(nobody);
    const std::uint64_t events = spool::Handle::current().metrics().io_events;
    co_await s.send(std::string_view("anyone?"));  // the ICMP answer fails the next call
    // Until the driver has dispatched the EPOLLERR edge, so that its error bit is set.
    while (spool::Handle::current().metrics().io_events == events) co_await spool::yield_now();
    std::array<char, 8> buf{};
    try {
      (void)co_await s.recv(buf);
      ADD_FAILURE() << "a datagram came from nowhere";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::connection_refused) << e.what();
    }
    // The error was taken: the next recv waits (an error bit left set would make it spin
    // inside its first poll, and this poll would never return).
    const spool::Waker noop = spool::Waker::noop();
    spool::Context cx(noop);
    auto again = s.recv(buf);
    EXPECT_TRUE(again.poll(cx).is_pending());
  }());
}

// A fresh path in the test's temporary directory.
std::string socket_path(const char* name) {
  const auto p = std::filesystem::temp_directory_path() /
                 ("spool-" + std::to_string(::getpid()) + "-" + name + ".sock");
  std::filesystem::remove(p);
  return p.string();
}

TEST_P(Unix, ListenerConnectReadWriteAndShutdown) {
  auto rt = build();
  const std::string path = socket_path(is_multi_thread() ? "mt" : "ct");
  rt.block_on([](std::string p) -> Task<void> {
    auto listener = UnixListener::bind(p);
    EXPECT_EQ(listener.path(), p);
    UnixStream client = co_await UnixStream::connect(p);
    auto [server, peer] = co_await listener.accept();
    EXPECT_EQ(peer, "");  // the connecting socket is unnamed
    co_await client.write_all(std::string_view("over a path"));
    client.shutdown(SHUT_WR);
    std::string got;
    std::array<char, 4> buf{};
    while (const std::size_t n = co_await server.read(buf)) got.append(buf.data(), n);
    EXPECT_EQ(got, "over a path");
  }(path));
  std::filesystem::remove(path);
}

TEST_P(Unix, APairsHalvesWorkFromTwoTasks) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = UnixStream::pair();
    auto [rd, wr] = std::move(a).into_split();
    auto writer = spool::spawn([](UnixStream::OwnedWriteHalf half) -> Task<void> {
      UnixStream::OwnedWriteHalf w = std::move(half);
      for (int i = 0; i < 100; ++i) co_await w.write_all(std::to_string(i % 10));
    }(std::move(wr)));
    std::string got;
    std::array<char, 16> buf{};
    while (got.size() < 100) {
      const std::size_t n = co_await b.read(buf);
      got.append(buf.data(), n);
    }
    EXPECT_EQ(got.substr(0, 12), "012345678901");
    co_await b.write_all(std::string_view("ack"));
    std::string in(3, '\0');
    co_await rd.read_exact(in);
    EXPECT_EQ(in, "ack");
    co_await writer;
  }());
}

// A read of an empty buffer gives 0 at once with nothing queued (as on TCP: Tcp.AnEmptyRead...),
// also through a read half.
TEST_P(Unix, AnEmptyReadGivesZeroAtOnce) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto [a, b] = UnixStream::pair();
    co_await spool_net_test::empty_reads_give_zero_at_once(a);
    co_await spool::spawn([](UnixStream& s) -> Task<void> {
      auto [rd, wr] = s.split();
      co_await spool_net_test::empty_reads_give_zero_at_once(rd);
    }(a));
  }());
}

TEST_P(Unix, ConnectingToAMissingPathNamesIt) {
  auto rt = build();
  const std::string path = socket_path("missing");
  rt.block_on([](std::string p) -> Task<void> {
    try {
      (void)co_await UnixStream::connect(p);
      ADD_FAILURE() << "connected to nothing";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::no_such_file_or_directory) << e.what();
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
  }(path));
}

TEST(UnixPath, ATooLongPathIsRefusedWithItsLimit) {
  const std::string long_path(200, 'x');
  EXPECT_THROW((void)UnixListener::bind(long_path), std::invalid_argument);
  EXPECT_THROW((void)UnixListener::bind(""), std::invalid_argument);
}

// The kernel would bind "/tmp/x" for "/tmp/x\0y", and a leading NUL is Linux's abstract
// namespace, which spool does not speak: both are refused before any socket is made.
TEST(UnixPath, APathWithANulByteIsRefused) {
  const std::string embedded("/tmp/spool-nul\0y", 16);
  const std::string leading("\0abstract", 9);
  for (const std::string& p : {embedded, leading}) {
    try {
      (void)UnixListener::bind(p);
      ADD_FAILURE() << "bind accepted a path with a NUL byte";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("NUL byte"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW((void)spool::block_on(UnixStream::connect(embedded)), std::invalid_argument);
}

}  // namespace
