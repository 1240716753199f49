// TlsStream's data path: 8 MiB each way at once through split halves in two tasks, the end
// of the stream (close_notify, and a transport that ends without it), shutdown's effects,
// and TLS over two pipes (io::Duplex).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "spool/io.hpp"
#include "spool/io/duplex.hpp"
#include "support/net.hpp"
#include "support/rt_flavor.hpp"
#include "support/tls.hpp"

namespace {

using spool::Task;
using spool::tls::TlsAcceptor;
using spool::tls::TlsConnector;
using spool::tls::TlsErrc;
using spool::tls::TlsError;
using namespace spool_tls_test;

constexpr std::size_t kEightMiB = 8 * 1024 * 1024;

class TlsStreamTest : public spool_rt_test::RtFlavorTest {
 protected:
  TlsConnector connector{client_builder().build()};
  TlsAcceptor acceptor{server_builder().build()};
};
SPOOL_RT_INSTANTIATE_FLAVORS(TlsStreamTest);

// Writes `data` in uneven pieces (never a record's size), then sends close_notify.
template <class Half>
Task<void> send_all(Half& out, const std::vector<std::uint8_t>& data) {
  std::size_t at = 0;
  for (std::size_t piece = 1; at < data.size(); piece = piece * 3 % 40'000 + 1) {
    const std::size_t n = std::min(piece, data.size() - at);
    co_await out.write_all(std::span(data.data() + at, n));
    at += n;
  }
  co_await out.shutdown();
}

// Reads until close_notify: everything that came.
template <class Half>
Task<std::vector<std::uint8_t>> receive_all(Half& in) {
  std::vector<std::uint8_t> got;
  std::vector<std::uint8_t> buf(7'000);
  for (;;) {
    const std::size_t n = co_await in.read(buf);
    if (n == 0) co_return got;
    got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
  }
}

// One end: its read half and its write half in two spawned tasks (on two workers of a
// multi-thread runtime, at once), sending `out` while receiving the peer's bytes.
Task<std::vector<std::uint8_t>> exchange(Stream s, std::vector<std::uint8_t> out) {
  auto [in, writer] = std::move(s).into_split();
  auto sending = spool::spawn([](auto w, std::vector<std::uint8_t> data) -> Task<void> {
    co_await send_all(w, data);
  }(std::move(writer), std::move(out)));
  auto receiving = spool::spawn([](auto r) -> Task<std::vector<std::uint8_t>> {
    co_return co_await receive_all(r);
  }(std::move(in)));
  co_await sending;
  co_return co_await receiving;
}

TEST_P(TlsStreamTest, EightMiBEachWayAtOnceThroughHalvesInTwoTasks) {
  auto rt = build();
  const auto to_server = spool_net_test::pattern(kEightMiB, 1);
  const auto to_client = spool_net_test::pattern(kEightMiB, 2);
  auto [at_server, at_client] =
      rt.block_on([](TlsConnector c, TlsAcceptor a, std::vector<std::uint8_t> up,
                     std::vector<std::uint8_t> down)
                      -> Task<std::pair<std::vector<std::uint8_t>, std::vector<std::uint8_t>>> {
        auto [client, server] = co_await connected_pair(c, a);
        auto server_side = spool::spawn(exchange(std::move(server), std::move(down)));
        auto at_client = co_await exchange(std::move(client), std::move(up));
        co_return std::pair(co_await server_side, std::move(at_client));
      }(connector, acceptor, to_server, to_client));
  EXPECT_TRUE(at_server == to_server) << "the server got " << at_server.size() << " bytes";
  EXPECT_TRUE(at_client == to_client) << "the client got " << at_client.size() << " bytes";
}

TEST_P(TlsStreamTest, BorrowedHalvesOfOneStreamWorkFromTwoTasks) {
  auto rt = build();
  rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<void> {
    auto [client, server] = co_await connected_pair(c, a);
    auto echo = spool::spawn([](Stream s) -> Task<void> {
      auto [in, out] = s.split();
      std::array<char, 4096> buf{};
      for (std::size_t n; (n = co_await in.read(buf)) != 0;) {
        co_await out.write_all(std::span(buf.data(), n));
      }
      co_await out.shutdown();
    }(std::move(server)));
    auto [in, out] = client.split();
    const auto data = spool_net_test::pattern(1 << 20, 3);
    auto writer = spool::spawn(send_all(out, data));
    EXPECT_TRUE(co_await receive_all(in) == data);
    co_await writer;
    co_await echo;
  }(connector, acceptor));
}

TEST_P(TlsStreamTest, ShutdownIsAReadOfZeroAndNoFurtherWrite) {
  auto rt = build();
  rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<void> {
    auto [client, server] = co_await connected_pair(c, a);
    co_await client.write_all(std::string_view("last words"));
    co_await client.shutdown();
    std::string got(10, '\0');
    co_await server.read_exact(got);
    EXPECT_EQ(got, "last words");
    EXPECT_EQ(co_await server.read(got), 0u);
    EXPECT_EQ(co_await server.read(got), 0u);  // and again
    EXPECT_THROW(co_await server.read_exact(got), spool::net::UnexpectedEof);
    try {
      co_await client.write_all(std::string_view("more"));
      ADD_FAILURE() << "a write after shutdown succeeded";
    } catch (const TlsError& e) {
      EXPECT_EQ(e.code(), TlsErrc::kClosed) << e.what();
    }
    // The server may still answer; the client reads it after its own shutdown.
    co_await server.write_all(std::string_view("bye"));
    co_await server.shutdown();
    std::string reply(3, '\0');
    co_await client.read_exact(reply);
    EXPECT_EQ(reply, "bye");
    EXPECT_EQ(co_await client.read(reply), 0u);
  }(connector, acceptor));
}

// The documented EOF semantics (rustls's, and OpenSSL 3's): a transport that ends without
// close_notify is an error, since an attacker could have cut the data short.
TEST_P(TlsStreamTest, APeerThatClosesWithoutCloseNotifyIsAnError) {
  auto rt = build();
  rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<void> {
    auto [client, server] = co_await connected_pair(c, a);
    co_await server.write_all(std::string_view("partial"));
    server.get_ref().shutdown(SHUT_WR);  // the TCP FIN, no close_notify
    std::string got(7, '\0');
    co_await client.read_exact(got);
    EXPECT_EQ(got, "partial");
    try {
      (void)co_await client.read(got);
      ADD_FAILURE() << "the read after a bare FIN returned";
    } catch (const TlsError& e) {
      EXPECT_EQ(e.code(), TlsErrc::kUnexpectedEof) << e.what();
      EXPECT_NE(std::string(e.what()).find("without sending close_notify"), std::string::npos)
          << e.what();
    }
  }(connector, acceptor));
}

TEST_P(TlsStreamTest, RunsOverTwoPipes) {
  auto rt = build();
  rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<void> {
    auto [client_in, server_out] = spool::pipe();
    auto [server_in, client_out] = spool::pipe();
    using Pipes = spool::io::Duplex<spool::PipeReader, spool::PipeWriter>;
    auto server = spool::spawn([](TlsAcceptor a, Pipes p) -> Task<std::vector<std::uint8_t>> {
      auto s = co_await a.accept(std::move(p));
      co_return co_await receive_all(s);
    }(a, Pipes(std::move(server_in), std::move(server_out))));
    auto client =
        co_await c.connect("localhost", Pipes(std::move(client_in), std::move(client_out)));
    const auto data = spool_net_test::pattern(300'000, 4);
    co_await send_all(client, data);
    EXPECT_TRUE(co_await server == data);
  }(connector, acceptor));
}

}  // namespace
