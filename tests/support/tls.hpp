// Helpers of the TLS tests: contexts over the test PKI, a connected client/server pair,
// and both ends of a handshake that should fail, with what each end reported.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <system_error>
#include <utility>

#include "spool/io.hpp"
#include "spool/io/duplex.hpp"
#include "spool/net.hpp"
#include "spool/spool.hpp"
#include "spool/tls.hpp"
#include "support/tls_certs.hpp"

namespace spool_tls_test {

using spool::net::TcpListener;
using spool::net::TcpStream;
using spool::tls::Role;
using spool::tls::TlsContextBuilder;
using Stream = spool::tls::TlsStream<TcpStream>;
using Pipes = spool::io::Duplex<spool::PipeReader, spool::PipeWriter>;
using PipeStream = spool::tls::TlsStream<Pipes>;

/// A server context with `id`'s certificate (the server's unless told).
inline TlsContextBuilder server_builder(const Identity& id = pki().server) {
  TlsContextBuilder b(Role::kServer);
  b.certificate_chain_pem(id.cert).private_key_pem(id.key);
  return b;
}

/// A client context that trusts the test CA only.
inline TlsContextBuilder client_builder() {
  TlsContextBuilder b(Role::kClient);
  b.ca_pem(pki().ca.cert);
  return b;
}

/// A connected pair over loopback TCP: (client, server), both handshakes done.
inline spool::Task<std::pair<Stream, Stream>> connected_pair(spool::tls::TlsConnector connector,
                                                             spool::tls::TlsAcceptor acceptor,
                                                             std::string name = "localhost") {
  auto listener = TcpListener::bind("127.0.0.1:0");
  auto server = spool::spawn([](TcpListener& l, spool::tls::TlsAcceptor a) -> spool::Task<Stream> {
    auto [tcp, peer] = co_await l.accept();
    co_return co_await a.accept(std::move(tcp));
  }(listener, acceptor));
  auto tcp = co_await TcpStream::connect(listener.local_addr());
  Stream client = co_await connector.connect(name, std::move(tcp));
  Stream accepted = co_await server;
  co_return std::pair<Stream, Stream>(std::move(client), std::move(accepted));
}

/// A client and a server joined by two pipes (64 KiB each way), both handshakes done.
inline spool::Task<std::pair<PipeStream, PipeStream>> piped_pair(
    TlsContextBuilder client_ctx = client_builder(),
    TlsContextBuilder server_ctx = server_builder()) {
  spool::tls::TlsConnector connector(client_ctx.build());
  spool::tls::TlsAcceptor acceptor(server_ctx.build());
  auto [client_in, server_out] = spool::pipe();
  auto [server_in, client_out] = spool::pipe();
  auto server = spool::spawn([](spool::tls::TlsAcceptor a, Pipes p) -> spool::Task<PipeStream> {
    co_return co_await a.accept(std::move(p));
  }(acceptor, Pipes(std::move(server_in), std::move(server_out))));
  PipeStream client =
      co_await connector.connect("localhost", Pipes(std::move(client_in), std::move(client_out)));
  co_return std::pair<PipeStream, PipeStream>(std::move(client), co_await server);
}

/// What one end of a handshake reported: its error's code and message (none: it succeeded).
struct EndResult {
  std::error_code code;
  std::string what;
  long verify_result = 0;
};

/// Both ends of a handshake expected to fail: the client connects to `name` and then reads
/// (a TLS 1.3 client learns of the server's refusal of its certificate there); the server
/// accepts and then shuts down.
inline spool::Task<std::pair<EndResult, EndResult>> failed_handshake(
    TlsContextBuilder client, TlsContextBuilder server, std::string name = "localhost") {
  spool::tls::TlsConnector connector(client.build());
  spool::tls::TlsAcceptor acceptor(server.build());
  auto listener = TcpListener::bind("127.0.0.1:0");
  auto server_end =
      spool::spawn([](TcpListener& l, spool::tls::TlsAcceptor a) -> spool::Task<EndResult> {
        auto [tcp, peer] = co_await l.accept();
        try {
          Stream s = co_await a.accept(std::move(tcp));
          co_await s.shutdown();
        } catch (const spool::tls::TlsError& e) {
          co_return EndResult{e.code(), e.what(), e.verify_result()};
        }
        co_return EndResult{};
      }(listener, acceptor));
  EndResult client_end;
  try {
    auto tcp = co_await TcpStream::connect(listener.local_addr());
    Stream s = co_await connector.connect(name, std::move(tcp));
    char byte = 0;
    (void)co_await s.read(std::span(&byte, 1));
  } catch (const spool::tls::TlsError& e) {
    client_end = EndResult{e.code(), e.what(), e.verify_result()};
  }
  co_return std::pair(client_end, co_await server_end);
}

}  // namespace spool_tls_test
