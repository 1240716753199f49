// TLS around its edges: handshakes dropped half-way (nothing leaks: run under ASan), TLS
// under a foreign executor, renegotiation refused, and the builder's refusals of bad input
// (a corrupt certificate in PEM text among them).
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "spool/io.hpp"
#include "spool/io/duplex.hpp"
#include "spool/sync/oneshot.hpp"
#include "support/fs.hpp"
#include "support/time_helpers.hpp"
#include "support/tls.hpp"

namespace {

using spool::Task;
using spool::tls::TlsAcceptor;
using spool::tls::TlsConnector;
using spool::tls::TlsErrc;
using spool::tls::TlsError;
using spool::tls::Version;
using namespace spool_tls_test;

// A client handshake dropped after its ClientHello went out, and a server handshake dropped
// after it answered that ClientHello (its SSL state, keys and buffers allocated): the
// runtime goes on, and LeakSanitizer (the asan preset) finds nothing left.
TEST(TlsLifecycle, HandshakesDroppedHalfWayLeakNothing) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  rt.block_on([]() -> Task<void> {
    TlsConnector connector(client_builder().build());
    TlsAcceptor acceptor(server_builder().build());
    // The client's side: a raw TCP server keeps its ClientHello.
    auto raw_server = TcpListener::bind("127.0.0.1:0");
    auto [cancel_client, client_cancelled] = spool::oneshot::channel<int>();
    auto client = spool::spawn([](TlsConnector c, spool::net::SocketAddr addr,
                                  spool::oneshot::Receiver<int> stop) -> Task<bool> {
      auto tcp = co_await TcpStream::connect(addr);
      auto r = co_await spool::select(c.connect("localhost", std::move(tcp)), std::move(stop));
      co_return r.index() == 1;  // stopped, not done
    }(connector, raw_server.local_addr(), std::move(client_cancelled)));
    auto [peer, addr] = co_await raw_server.accept();
    std::vector<char> hello(16 * 1024);
    const std::size_t hello_len = co_await peer.read(hello);
    EXPECT_GT(hello_len, 0u);
    cancel_client.send(1);
    EXPECT_TRUE(co_await client);

    // The server's side: a raw client replays that ClientHello and waits for the answer.
    auto listener = TcpListener::bind("127.0.0.1:0");
    auto [cancel_server, server_cancelled] = spool::oneshot::channel<int>();
    auto server = spool::spawn(
        [](TlsAcceptor a, TcpListener& l, spool::oneshot::Receiver<int> stop) -> Task<bool> {
          auto [tcp, from] = co_await l.accept();
          auto r = co_await spool::select(a.accept(std::move(tcp)), std::move(stop));
          co_return r.index() == 1;
        }(acceptor, listener, std::move(server_cancelled)));
    auto raw_client = co_await TcpStream::connect(listener.local_addr());
    co_await raw_client.write_all(std::span(hello.data(), hello_len));
    std::vector<char> answer(16 * 1024);
    EXPECT_GT(co_await raw_client.read(answer), 0u);  // the ServerHello flight
    cancel_server.send(1);
    EXPECT_TRUE(co_await server);
  }());
}

// A handshake and an exchange under an executor with no reactor slot (the driver's
// background thread dispatches the I/O), the server under spool::block_on on a plain thread.
// The server echoes only once the client has waited (its read cannot find the reply ready),
// so the background driver is exercised on every run.
TEST(TlsLifecycle, UnderAForeignExecutor) {
  auto listener = TcpListener::bind("127.0.0.1:0");
  TlsAcceptor acceptor(server_builder().build());
  // Counted by run_foreign (seq_cst increments, then notify); waited on by the server.
  std::atomic<int> pending{0};
  std::thread server([&] {
    spool::block_on([](TcpListener& l, TlsAcceptor a, std::atomic<int>& waited) -> Task<void> {
      auto [tcp, peer] = co_await l.accept();
      Stream s = co_await a.accept(std::move(tcp));
      std::string msg(11, '\0');
      co_await s.read_exact(msg);
      waited.wait(0);
      co_await s.write_all(msg);
      co_await s.shutdown();
    }(listener, acceptor, pending));
  });
  auto client = [](TlsConnector c, spool::net::SocketAddr addr) -> Task<std::string> {
    Stream s = co_await c.connect("localhost", co_await TcpStream::connect(addr));
    co_await s.write_all(std::string_view("out of band"));
    std::string back(11, '\0');
    co_await s.read_exact(back);
    EXPECT_EQ(co_await s.read(back), 0u);  // the server's close_notify
    co_return back;
  }(TlsConnector(client_builder().build()), listener.local_addr());
  EXPECT_EQ(spool_time_test::run_foreign(client, nullptr, &pending), "out of band");
  server.join();
}

// TLS 1.2: a server that asks to renegotiate (its HelloRequest) is refused by a spool client
// (a no_renegotiation alert), which the server's read reports.
TEST(TlsLifecycle, RenegotiationIsRefused) {
  auto rt = spool::Builder::current_thread().build();
  auto client = client_builder();
  client.max_version(Version::kTls12);
  auto server = server_builder();
  server.max_version(Version::kTls12);
  rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<void> {
    auto [client, server] = co_await connected_pair(c, a);
    EXPECT_EQ(client.version(), "TLSv1.2");
    // The server's side is forced past spool's own refusal, to play a renegotiating peer.
    SSL* ssl = server.native_handle();
    SSL_clear_options(ssl, SSL_OP_NO_RENEGOTIATION);
    EXPECT_EQ(SSL_renegotiate(ssl), 1);
    (void)SSL_do_handshake(ssl);  // queues the HelloRequest
    auto client_reads = spool::spawn([](Stream& s) -> Task<void> {
      char byte = 0;
      try {
        (void)co_await s.read(std::span(&byte, 1));
      } catch (const TlsError&) {  // the server gives up the connection below
      }
    }(client));
    char byte = 0;
    try {
      (void)co_await server.read(std::span(&byte, 1));
      ADD_FAILURE() << "the renegotiating server read data";
    } catch (const TlsError& e) {
      EXPECT_EQ(e.code(), TlsErrc::kProtocol) << e.what();
      EXPECT_NE(std::string(e.what()).find("no renegotiation"), std::string::npos) << e.what();
    }
    server.get_ref().shutdown(SHUT_RDWR);
    co_await client_reads;
  }(TlsConnector(client.build()), TlsAcceptor(server.build())));
}

// Runs `f`, which must throw a TlsError kConfig whose message holds `expected`.
template <class F>
void expect_config_error(F&& f, const std::string& expected) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one saying " << expected;
  } catch (const TlsError& e) {
    EXPECT_EQ(e.code(), TlsErrc::kConfig) << e.what();
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

TEST(TlsLifecycle, BadInputIsRefusedWithAClearError) {
  expect_config_error([] { TlsContextBuilder(Role::kServer).certificate_chain_pem("not PEM"); },
                      "cannot load the certificate");
  expect_config_error(
      [] { TlsContextBuilder(Role::kServer).certificate_chain_file("/nonexistent.pem"); },
      "'/nonexistent.pem'");
  // OpenSSL takes a path as a C string: it would read "/etc/hostname" for this one.
  const std::filesystem::path nul = std::string("/etc/hostname\0.pem", 18);
  EXPECT_THROW(TlsContextBuilder(Role::kServer).certificate_chain_file(nul), std::invalid_argument);
  EXPECT_THROW(TlsContextBuilder(Role::kServer).private_key_file(nul), std::invalid_argument);
  EXPECT_THROW(TlsContextBuilder(Role::kServer).ca_file(nul), std::invalid_argument);
  expect_config_error([] { TlsContextBuilder(Role::kClient).ca_pem("no certificate here"); },
                      "no CA certificate");
  expect_config_error([] { TlsContextBuilder(Role::kServer).build(); }, "needs a certificate");
  expect_config_error(
      [] { server_builder().verify(spool::tls::Verify::kRequireClientCert).build(); },
      "needs the CAs it trusts");
  expect_config_error([] { server_builder().verify(spool::tls::Verify::kPeer).build(); },
                      "needs the CAs it trusts");
  expect_config_error(
      [] {
        TlsContextBuilder(Role::kServer)
            .certificate_chain_pem(pki().server.cert)
            .private_key_pem(pki().client.key)
            .build();
      },
      "key values mismatch");
  expect_config_error([] { TlsContextBuilder(Role::kClient).ciphersuites("NO_SUCH_SUITE"); },
                      "NO_SUCH_SUITE");
  EXPECT_THROW(TlsConnector(server_builder().build()), std::invalid_argument);
  EXPECT_THROW(TlsAcceptor(client_builder().build()), std::invalid_argument);
  EXPECT_THROW(TlsContextBuilder(Role::kClient).verify(spool::tls::Verify::kRequireClientCert),
               std::invalid_argument);
  TlsContextBuilder spent = client_builder();
  (void)spent.build();
  EXPECT_THROW(spent.min_version(Version::kTls13), std::logic_error);
  // A verifying client needs the name to check the certificate against.
  TlsConnector connector(client_builder().build());
  auto [r, w] = spool::pipe();
  using Pipes = spool::io::Duplex<spool::PipeReader, spool::PipeWriter>;
  EXPECT_THROW((void)connector.connect("", Pipes(std::move(r), std::move(w))),
               std::invalid_argument);
}

// A corrupt certificate after a good one in PEM text is refused, naming the setter, as the
// _file setters refuse the same text: only the end of the text ends the list (OpenSSL's "no
// start line"), never a block it cannot read. Blocks of another kind are skipped, as there.
TEST(TlsLifecycle, ACorruptCertificateInPemTextIsRefusedAsInAFile) {
  const std::string corrupt =
      "-----BEGIN CERTIFICATE-----\nTUlJQ0dhcmJhZ2U=\n-----END CERTIFICATE-----\n";
  const std::string cut_short = "-----BEGIN CERTIFICATE-----\nnot base64 at all !!!\n";
  const spool_fs_test::TempDir dir;
  const auto file = dir.path() / "certs.pem";
  for (const std::string& bad : {corrupt, cut_short}) {
    expect_config_error(
        [&] { TlsContextBuilder(Role::kServer).certificate_chain_pem(pki().server.cert + bad); },
        "certificate_chain_pem: a certificate in the PEM text given cannot be read");
    expect_config_error([&] { TlsContextBuilder(Role::kClient).ca_pem(pki().ca.cert + bad); },
                        "ca_pem: a certificate in the PEM text given cannot be read");
    std::ofstream(file) << pki().server.cert + bad;
    expect_config_error([&] { TlsContextBuilder(Role::kServer).certificate_chain_file(file); },
                        "certs.pem");
    expect_config_error([&] { TlsContextBuilder(Role::kClient).ca_file(file); }, "certs.pem");
  }
  // A chain followed by its key and a comment, and two CAs followed by text: accepted.
  TlsContextBuilder server(Role::kServer);
  server.certificate_chain_pem(pki().server.cert + pki().ca.cert + pki().server.key + "# end\n")
      .private_key_pem(pki().server.key);
  (void)server.build();
  (void)TlsContextBuilder(Role::kClient)
      .ca_pem(pki().ca.cert + pki().other_ca.cert + "end\n")
      .build();
}

}  // namespace
