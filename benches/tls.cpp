// W17 tls_echo: W10 (net.cpp) over TLS 1.3 with TLS_AES_128_GCM_SHA256 only. Before any
// repetition: a self-signed ECDSA P-256 certificate for localhost (made with OpenSSL's API,
// tests/support/tls_certs.cpp) and the two contexts (TLS 1.3 only, that one suite); the
// clients trust the certificate as their only CA and verify the host name localhost (sent
// as SNI). Per repetition the 64 connections are made and both sides' handshakes completed
// (untimed; each checks the version and suite), then the timed phase runs the 64 clients'
// 2,000 round trips of 64 bytes (write_all, then read_exact), as W10. The shape of the Asio
// peer's W17 (shared/peers/asio/asio_bench.cpp). Run on each I/O backend, as W10:
// `tls_echo` on epoll, `tls_echo@io_uring` on io_uring.
#include <openssl/ssl.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "spool/net.hpp"
#include "spool/runtime.hpp"
#include "spool/tls.hpp"
#include "support/tls_certs.hpp"

namespace spool_bench {

namespace {

using TlsStream = spool::tls::TlsStream<spool::net::TcpStream>;

constexpr std::size_t kClients = 64;
constexpr std::size_t kRoundTrips = 2'000;
constexpr const char* kSuite = "TLS_AES_128_GCM_SHA256";

void check_tls13(TlsStream& s) {
  const SSL_CIPHER* c = SSL_get_current_cipher(s.native_handle());
  check_in_task(
      s.version() == "TLSv1.3" && c != nullptr && std::strcmp(SSL_CIPHER_get_name(c), kSuite) == 0,
      "tls_echo: the connection did not negotiate TLSv1.3 with TLS_AES_128_GCM_SHA256");
}

// Echoes until the client goes (its streams are dropped without close_notify: the read's
// TlsErrc::kUnexpectedEof ends the session, as Asio's peer ends on "stream truncated").
spool::Task<void> w17_echo(spool::tls::TlsAcceptor acceptor, spool::net::TcpStream tcp) {
  tcp.set_nodelay(true);
  TlsStream s = co_await acceptor.accept(std::move(tcp));
  check_tls13(s);
  std::array<std::uint8_t, 1024> buf{};
  try {
    for (;;) {
      const std::size_t n = co_await s.read(buf);
      if (n == 0) co_return;
      co_await s.write_all(std::span(buf.data(), n));
    }
  } catch (const std::system_error&) {
  }
}

spool::Task<void> w17_accept_loop(spool::net::TcpListener listener,
                                  spool::tls::TlsAcceptor acceptor) {
  for (;;) {
    auto [s, peer] = co_await listener.accept();
    (void)spool::spawn(w17_echo(acceptor, std::move(s)));
  }
}

spool::Task<TlsStream> w17_connect(spool::tls::TlsConnector connector,
                                   spool::net::SocketAddr addr) {
  auto tcp = co_await spool::net::TcpStream::connect(addr);
  tcp.set_nodelay(true);
  TlsStream s = co_await connector.connect("localhost", std::move(tcp));
  check_tls13(s);
  co_return s;
}

spool::Task<Clock::duration> w17_round(spool::tls::TlsConnector connector,
                                       spool::net::SocketAddr addr) {
  std::vector<spool::JoinHandle<TlsStream>> connecting;
  connecting.reserve(kClients);
  for (std::size_t c = 0; c < kClients; ++c)
    connecting.push_back(spool::spawn(w17_connect(connector, addr)));
  std::vector<TlsStream> streams;
  streams.reserve(kClients);
  for (auto& h : connecting) streams.push_back(co_await h);
  co_return co_await timed_echo_clients(std::move(streams), kRoundTrips);
}

void w17_tls_echo_on(Config cfg, const char* name) {
  const spool_tls_test::Identity id = spool_tls_test::self_signed_localhost();
  spool::tls::TlsContextBuilder server(spool::tls::Role::kServer);
  server.certificate_chain_pem(id.cert).private_key_pem(id.key);
  spool::tls::TlsContextBuilder client(spool::tls::Role::kClient);
  client.ca_pem(id.cert);
  for (auto* b : {&server, &client}) {
    b->min_version(spool::tls::Version::kTls13)
        .max_version(spool::tls::Version::kTls13)
        .ciphersuites(kSuite);
  }
  spool::tls::TlsAcceptor acceptor(server.build());
  spool::tls::TlsConnector connector(client.build());

  spool::Runtime rt = make_runtime(cfg);
  auto listener = rt.block_on([]() -> spool::Task<spool::net::TcpListener> {
    co_return spool::net::TcpListener::bind("127.0.0.1:0");
  }());
  const spool::net::SocketAddr addr = listener.local_addr();
  (void)rt.spawn(w17_accept_loop(std::move(listener), acceptor));
  auto samples = measure(cfg, [&] { return rt.block_on(w17_round(connector, addr)); });
  report_ns_per_op(name, samples, kClients * kRoundTrips);
}

void w17_tls_echo(const Config& cfg) { on_each_backend(cfg, "tls_echo", w17_tls_echo_on); }

}  // namespace

std::vector<Workload> tls_workloads() { return {{"W17", "tls_echo", w17_tls_echo}}; }

}  // namespace spool_bench
