// TCP errors: a refused connection, a peer that resets, writes to a closed socket (no
// SIGPIPE), a socket dropped while a read is pending, and a socket that outlives its runtime
// (EMFILE: emfile_test.cpp).
#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <optional>
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

class TcpErrors : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(TcpErrors);

TEST_P(TcpErrors, ConnectionRefusedNamesTheAddress) {
  auto rt = build();
  const SocketAddr addr = spool_net_test::closed_port(SOCK_STREAM);
  rt.block_on([](SocketAddr a) -> Task<void> {
    try {
      (void)co_await TcpStream::connect(a);
      ADD_FAILURE() << "connected to a closed port";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::connection_refused) << e.what();
      EXPECT_NE(std::string(e.what()).find(a.to_string()), std::string::npos) << e.what();
    }
  }(addr));
}

TEST_P(TcpErrors, APeerThatResetsFailsTheReadAndTheWrite) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    const std::string server_name = "peer " + listener.local_addr().to_string();
    TcpStream client = co_await TcpStream::connect(listener.local_addr());
    {
      auto [server, peer] = co_await listener.accept();
      server.set_linger(std::chrono::seconds(0));  // its close sends RST
    }
    const std::string what = co_await spool_net_test::read_expecting_reset(client);
    EXPECT_NE(what.find("spool::net::TcpStream::read"), std::string::npos) << what;
    // The kernel forgets the peer of a reset socket: the stream remembers it.
    EXPECT_NE(what.find(server_name), std::string::npos) << what;
    try {
      co_await client.write_all(std::string_view("after the reset"));
      ADD_FAILURE() << "the write after a reset returned";
    } catch (const std::system_error& e) {
      EXPECT_TRUE(e.code() == std::errc::broken_pipe || e.code() == std::errc::connection_reset)
          << e.what();
      EXPECT_NE(std::string(e.what()).find(server_name), std::string::npos) << e.what();
    }
  }());
}

// A peek's error names the peek (it named the read), of the stream and of its read half.
TEST_P(TcpErrors, APeekAfterAResetNamesThePeek) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    for (bool half : {false, true}) {
      auto [client, server] = co_await spool_net_test::tcp_pair();
      server.set_linger(std::chrono::seconds(0));
      { TcpStream gone = std::move(server); }  // sends RST
      std::array<char, 4> buf{};
      auto [rd, wr] = client.split();
      try {
        (void)(half ? co_await rd.peek(buf) : co_await client.peek(buf));
        ADD_FAILURE() << "the peek after a reset returned";
      } catch (const std::system_error& e) {
        EXPECT_EQ(e.code(), std::errc::connection_reset) << e.what();
        EXPECT_NE(std::string(e.what()).find("spool::net::TcpStream::peek"), std::string::npos)
            << e.what();
      }
    }
  }());
}

TEST_P(TcpErrors, AnAcceptedConnectionResetByItsClientNamesItsPeer) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    std::optional<TcpStream> client = co_await TcpStream::connect(listener.local_addr());
    auto [server, peer] = co_await listener.accept();
    client->set_linger(std::chrono::seconds(0));
    client.reset();  // sends RST
    const std::string what = co_await spool_net_test::read_expecting_reset(server);
    EXPECT_NE(what.find("peer " + peer.to_string()), std::string::npos) << what;
  }());
}

// The peer closed: writes fail with EPIPE (or ECONNRESET) and the process is not killed by
// SIGPIPE (its default action would end the test binary).
TEST_P(TcpErrors, WritingToAClosedSocketThrowsInsteadOfRaisingSigpipe) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    TcpStream client = co_await TcpStream::connect(listener.local_addr());
    { auto accepted = co_await listener.accept(); }  // closed at once
    const std::vector<char> chunk(64 * 1024, 'x');
    try {
      for (int i = 0; i < 1000; ++i) co_await client.write_all(chunk);
      ADD_FAILURE() << "64 MB went to a closed socket";
    } catch (const std::system_error& e) {
      EXPECT_TRUE(e.code() == std::errc::broken_pipe || e.code() == std::errc::connection_reset)
          << e.what();
    }
  }());
}

// A task waiting in read is cancelled (its stream destroyed with it): the registration goes,
// the socket closes, and the peer reads the end of the stream.
TEST_P(TcpErrors, ASocketDroppedWhileAReadIsPendingClosesCleanly) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    TcpStream client = co_await TcpStream::connect(listener.local_addr());
    auto [server, peer] = co_await listener.accept();
    const std::size_t before = spool::Handle::current().metrics().io_registrations;
    auto reader = spool::spawn([](TcpStream s) -> Task<void> {
      std::array<char, 8> buf{};
      (void)co_await s.read(buf);
      ADD_FAILURE() << "nothing was written";
    }(std::move(server)));
    co_await spool::yield_now();  // let it start waiting (or not: both must work)
    reader.abort();
    try {
      co_await reader;
    } catch (const spool::JoinError& e) {
      EXPECT_TRUE(e.is_cancelled());
    }
    std::array<char, 8> buf{};
    EXPECT_EQ(co_await client.read(buf), 0u);
    EXPECT_EQ(spool::Handle::current().metrics().io_registrations, before - 1);
  }());
}

// A listener made under a runtime that has shut down: accepting is a clear error.
TEST(TcpShutdown, ASocketThatOutlivesItsRuntimeThrows) {
  std::optional<TcpListener> listener;
  {
    auto rt = spool::Builder::multi_thread().worker_threads(1).build();
    listener.emplace(
        rt.block_on([]() -> Task<TcpListener> { co_return TcpListener::bind("127.0.0.1:0"); }()));
  }
  try {
    (void)spool::block_on(listener->accept());
    ADD_FAILURE() << "accept returned";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::operation_canceled);
    EXPECT_NE(std::string(e.what()).find("shut down"), std::string::npos) << e.what();
  }
}

TEST_P(TcpErrors, AMovedFromStreamRefusesOperationsWithAClearError) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    TcpStream client = co_await TcpStream::connect(listener.local_addr());
    auto halves = std::move(client).into_split();
    std::array<char, 4> buf{};
    try {
      (void)co_await client.read(buf);  // NOLINT(bugprone-use-after-move): the misuse tested
      ADD_FAILURE() << "read on a moved-from stream returned";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("moved-from"), std::string::npos) << e.what();
    }
  }());
}

// Passes when `call` throws the closed-or-moved-from std::logic_error (a call on the
// descriptor -1 said only EBADF, in a std::system_error).
template <class F>
void expect_moved_from_refused(const char* what, F call) {
  try {
    call();
    ADD_FAILURE() << what << " on a moved-from socket returned";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("moved-from"), std::string::npos)
        << what << ": " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << " on a moved-from socket threw another error: " << e.what();
  }
}

// NOLINTBEGIN(bugprone-use-after-move): the misuse tested
TEST_P(TcpErrors, EveryCallOfAMovedFromSocketIsRefusedWithAClearError) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    auto listener = TcpListener::bind("127.0.0.1:0");
    TcpStream stream = co_await TcpStream::connect(listener.local_addr());
    TcpStream stream_now = std::move(stream);
    TcpListener listener_now = std::move(listener);
    expect_moved_from_refused("TcpStream::shutdown", [&] { stream.shutdown(); });
    expect_moved_from_refused("TcpStream::peer_addr", [&] { (void)stream.peer_addr(); });
    expect_moved_from_refused("TcpStream::local_addr", [&] { (void)stream.local_addr(); });
    expect_moved_from_refused("TcpListener::local_addr", [&] { (void)listener.local_addr(); });
    auto udp = spool::net::UdpSocket::bind("127.0.0.1:0");
    const SocketAddr udp_addr = udp.local_addr();
    spool::net::UdpSocket udp_now = std::move(udp);
    expect_moved_from_refused("UdpSocket::connect", [&] { udp.connect(udp_addr); });
    expect_moved_from_refused("UdpSocket::local_addr", [&] { (void)udp.local_addr(); });
    expect_moved_from_refused("UdpSocket::peer_addr", [&] { (void)udp.peer_addr(); });
    // Named members, not structured bindings: clang 14 cannot capture those in a lambda.
    auto dgrams = spool::net::UnixDatagram::pair();
    spool::net::UnixDatagram& dgram = dgrams.first;
    spool::net::UnixDatagram dgram_now = std::move(dgram);
    expect_moved_from_refused("UnixDatagram::connect", [&] { dgram.connect("/nonexistent"); });
    expect_moved_from_refused("UnixDatagram::local_path", [&] { (void)dgram.local_path(); });
    expect_moved_from_refused("UnixDatagram::peer_path", [&] { (void)dgram.peer_path(); });
    expect_moved_from_refused("UnixDatagram::shutdown", [&] { dgram.shutdown(SHUT_WR); });
    auto unix_streams = spool::net::UnixStream::pair();
    spool::net::UnixStream& unix_stream = unix_streams.first;
    spool::net::UnixStream unix_now = std::move(unix_stream);
    expect_moved_from_refused("UnixStream::shutdown", [&] { unix_stream.shutdown(SHUT_WR); });
    expect_moved_from_refused("UnixStream::peer_path", [&] { (void)unix_stream.peer_path(); });
  }());
}
// NOLINTEND(bugprone-use-after-move)

TEST(TcpBind, AnAddressInUseNamesTheAddress) {
  auto first = TcpListener::bind("127.0.0.1:0");
  try {
    (void)TcpListener::bind(first.local_addr());
    ADD_FAILURE() << "bound twice";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::address_in_use);
    EXPECT_NE(std::string(e.what()).find(first.local_addr().to_string()), std::string::npos);
  }
}

}  // namespace
