// A TLS stream with ciphertext waiting to be sent (an answer a read produced, a write dropped
// half-way, a transport that stopped taking bytes): what reads, writes and dropped futures
// do then. Over two pipes, whose capacity (64 KiB) makes "the transport is full" exact.
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <vector>

#include "spool/core/poll_fn.hpp"
#include "support/tls.hpp"

namespace {

using spool::Task;
using spool::tls::TlsAcceptor;
using spool::tls::TlsConnector;
using namespace spool_tls_test;

// The peer asks to renegotiate (TLS 1.2), sends its last reply and close_notify, then goes
// away (review finding 1). Our read of that reply refuses the renegotiation, and sending the
// refusal fails (EPIPE): the read still gets the reply and then the end, and the write error
// is the next write's, not the read's.
TEST(TlsPendingOutput, AReadGetsItsRecordWhenSendingItsAnswerFails) {
  auto rt = spool::Builder::current_thread().build();
  auto client = client_builder();
  client.max_version(spool::tls::Version::kTls12);
  rt.block_on([](TlsContextBuilder c) -> Task<void> {
    auto [client, server] = co_await piped_pair(std::move(c));
    SSL* ssl = server.native_handle();  // forced past spool's refusal, to play such a peer
    SSL_clear_options(ssl, SSL_OP_NO_RENEGOTIATION);
    EXPECT_EQ(SSL_renegotiate(ssl), 1);
    (void)SSL_do_handshake(ssl);                                // queues the HelloRequest
    co_await server.write_all(std::string_view("last reply"));  // sent after it
    co_await server.shutdown();
    { PipeStream gone = std::move(server); }  // its ends close: our writes fail with EPIPE
    std::string got(10, '\0');
    co_await client.read_exact(got);
    EXPECT_EQ(got, "last reply");
    EXPECT_EQ(co_await client.read(got), 0u);  // the close_notify
    try {
      co_await client.write_all(std::string_view("more"));
      ADD_FAILURE() << "a write to a closed pipe succeeded";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), EPIPE) << e.what();
    }
  }(std::move(client)));
}

// A write reports its count once its record is encrypted, before the transport takes it
// (review finding 5, tokio-rustls's behaviour): polled once each against a pipe the server
// does not read, writes succeed until one must wait for earlier records, and that one,
// dropped, encrypted nothing. The server gets exactly the bytes the writes reported, once
// flush() and shutdown() sent them.
TEST(TlsPendingOutput, AWriteCountsItsRecordOnceEncryptedAndADroppedOneSendsNothing) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    auto [client, server] = co_await piped_pair();
    const std::vector<char> piece(10'000, 'w');
    std::size_t reported = 0;
    for (bool waited = false; !waited;) {
      auto write = client.write(piece);
      co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<int> {
        auto p = write.poll(cx);
        if (p.is_ready()) {
          reported += p.value();
        } else {
          waited = true;
        }
        return 0;
      });
    }  // the waiting write is dropped here
    EXPECT_GT(reported, 64u * 1024) << "the pipe took less than it holds";
    auto received = spool::spawn([](PipeStream& s) -> Task<std::size_t> {
      std::vector<char> buf(64 * 1024);
      std::size_t total = 0;
      for (std::size_t n; (n = co_await s.read(buf)) != 0;) total += n;
      co_return total;
    }(server));
    co_await client.flush();
    co_await client.shutdown();
    EXPECT_EQ(co_await received, reported);
  }());
}

}  // namespace
