// TLS's own messages after the handshake: a client that asks a spool server to renegotiate
// (TLS 1.2: refused), key updates (TLS 1.3) both ways, and a count-bounded stress of the
// halves (two tasks per end on a multi-thread runtime; run it under TSan).
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "support/tls.hpp"

namespace {

constexpr std::uint32_t kCount = 20'000;  // counters of the stress test

using spool::Task;
using spool::tls::TlsAcceptor;
using spool::tls::TlsConnector;
using spool::tls::TlsError;
using spool::tls::Version;
using namespace spool_tls_test;

// TLS 1.2: the client's renegotiation ClientHello gets the server's no_renegotiation alert,
// which fails the client's read; the server is not disturbed.
TEST(TlsProtocol, AClientAskingToRenegotiateIsRefused) {
  auto rt = spool::Builder::current_thread().build();
  auto client = client_builder();
  client.max_version(Version::kTls12);
  rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<void> {
    auto [client, server] = co_await connected_pair(c, a);
    SSL* ssl = client.native_handle();  // forced past spool's refusal, to play such a peer
    SSL_clear_options(ssl, SSL_OP_NO_RENEGOTIATION);
    EXPECT_EQ(SSL_renegotiate(ssl), 1);
    (void)SSL_do_handshake(ssl);  // queues the ClientHello
    co_await client.flush();
    auto server_reads = spool::spawn([](Stream& s) -> Task<std::string> {
      std::string got(2, '\0');
      co_await s.read_exact(got);  // past the ClientHello it refused
      co_return got;
    }(server));
    char byte = 0;
    try {
      (void)co_await client.read(std::span(&byte, 1));
      ADD_FAILURE() << "the renegotiating client read data";
    } catch (const TlsError& e) {
      EXPECT_NE(std::string(e.what()).find("no renegotiation"), std::string::npos) << e.what();
    }
    // The client gives up; the server reads the end without close_notify (kUnexpectedEof).
    client.get_ref().shutdown(SHUT_RDWR);
    EXPECT_THROW(co_await server_reads, spool::JoinError);
  }(TlsConnector(client.build()), TlsAcceptor(server_builder().build())));
}

// TLS 1.3 key updates, each side asking the other to update too: data flows on both ways.
TEST(TlsProtocol, KeyUpdatesBothWaysKeepTheStreamWorking) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [client, server] = co_await connected_pair(TlsConnector(client_builder().build()),
                                                    TlsAcceptor(server_builder().build()));
    std::string got(5, '\0');
    for (Stream* from : {&server, &client}) {
      Stream* to = from == &server ? &client : &server;
      EXPECT_EQ(SSL_key_update(from->native_handle(), SSL_KEY_UPDATE_REQUESTED), 1);
      co_await from->write_all(std::string_view("first"));  // after its KeyUpdate
      co_await to->read_exact(got);
      EXPECT_EQ(got, "first");
      co_await to->write_all(std::string_view("reply"));  // after the answering KeyUpdate
      co_await from->read_exact(got);
      EXPECT_EQ(got, "reply");
    }
  }());
}

// `v`'s bytes.
std::span<char> bytes_of(std::uint32_t& v) { return {reinterpret_cast<char*>(&v), sizeof v}; }

// Counters through owned halves, four tasks on two workers: the server echoes what its read
// half gets through its write half; the client's writer sends kCount counters while its
// reader checks each echo in order. Bounded by count; the invariant: every counter comes
// back once, in order (no byte lost, duplicated or reordered by the halves' locking).
TEST(TlsProtocol, HalvesUnderStressEchoEveryCounterInOrder) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  rt.block_on([]() -> Task<void> {
    auto [client, server] = co_await connected_pair(TlsConnector(client_builder().build()),
                                                    TlsAcceptor(server_builder().build()));
    auto [server_in, server_out] = std::move(server).into_split();
    auto echo =
        spool::spawn([](Stream::OwnedReadHalf in, Stream::OwnedWriteHalf out) -> Task<void> {
          char buf[1000];
          for (std::size_t n; (n = co_await in.read(std::span(buf, sizeof buf))) != 0;) {
            co_await out.write_all(std::span(buf, n));
          }
          co_await out.shutdown();
        }(std::move(server_in), std::move(server_out)));
    auto [in, out] = std::move(client).into_split();
    auto writer = spool::spawn([](Stream::OwnedWriteHalf w) -> Task<void> {
      for (std::uint32_t i = 0; i < kCount; ++i) co_await w.write_all(bytes_of(i));
      co_await w.shutdown();
    }(std::move(out)));
    std::uint32_t expected = 0;
    for (std::uint32_t got = 0; expected < kCount; ++expected) {
      co_await in.read_exact(bytes_of(got));
      if (got != expected) {
        ADD_FAILURE() << "counter " << got << " came where " << expected << " was due";
        break;
      }
    }
    EXPECT_EQ(expected, kCount);
    char end = 0;
    EXPECT_EQ(co_await in.read(std::span(&end, 1)), 0u);  // the echo's close_notify
    co_await writer;
    co_await echo;
  }());
}

}  // namespace
