// Handshakes over loopback TCP: success (version, ALPN, SNI, a client certificate), and
// each failure with what both ends report: an expired certificate, a wrong host, an unknown
// CA, a required client certificate missing, a protocol version mismatch. (Both I/O
// backends: ctest runs tls_tests again under SPOOL_IO_BACKEND=io_uring.)
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <string>
#include <vector>

#include "support/rt_flavor.hpp"
#include "support/tls.hpp"

namespace {

using spool::Task;

// The CN of `name`.
std::string common_name(const X509_NAME* name) {
  char cn[256] = {};
  X509_NAME_get_text_by_NID(name, NID_commonName, cn, sizeof cn);
  return cn;
}

using spool::tls::TlsAcceptor;
using spool::tls::TlsConnector;
using spool::tls::TlsErrc;
using spool::tls::Verify;
using spool::tls::Version;
using namespace spool_tls_test;

class TlsHandshake : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(TlsHandshake);

TEST_P(TlsHandshake, SucceedsAndAgreesOnVersionAlpnAndSni) {
  auto rt = build();
  auto client = client_builder();
  client.alpn({"h2", "http/1.1"});
  auto server = server_builder();
  server.alpn({"http/1.1"});
  TlsConnector connector(client.build());
  TlsAcceptor acceptor(server.build());
  rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<void> {
    auto [client, server] = co_await connected_pair(c, a);
    EXPECT_EQ(client.version(), "TLSv1.3");
    EXPECT_EQ(client.alpn_protocol(), "http/1.1");
    EXPECT_EQ(server.alpn_protocol(), "http/1.1");
    EXPECT_EQ(server.server_name(), "localhost");
    co_await client.write_all(std::string_view("hello over TLS"));
    std::string got(14, '\0');
    co_await server.read_exact(got);
    EXPECT_EQ(got, "hello over TLS");
  }(connector, acceptor));
}

TEST_P(TlsHandshake, AnIpAddressIsCheckedAgainstTheCertificatesIpSan) {
  auto rt = build();
  TlsConnector connector(client_builder().build());
  TlsAcceptor acceptor(server_builder().build());
  rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<void> {
    auto [client, server] = co_await connected_pair(c, a, "127.0.0.1");
    EXPECT_EQ(server.server_name(), "");  // no SNI for an address
  }(connector, acceptor));
}

TEST_P(TlsHandshake, ExpiredCertificateIsRefusedSayingSo) {
  auto rt = build();
  auto [client, server] =
      rt.block_on(failed_handshake(client_builder(), server_builder(pki().expired)));
  EXPECT_EQ(client.code, TlsErrc::kVerifyFailed) << client.what;
  EXPECT_EQ(client.verify_result, X509_V_ERR_CERT_HAS_EXPIRED);
  EXPECT_NE(client.what.find("certificate has expired"), std::string::npos) << client.what;
  EXPECT_NE(client.what.find("'localhost'"), std::string::npos) << client.what;
  EXPECT_EQ(server.code, TlsErrc::kHandshake) << server.what;
  EXPECT_NE(server.what.find("certificate expired"), std::string::npos) << server.what;
}

TEST_P(TlsHandshake, WrongHostIsRefusedNamingTheExpectedHost) {
  auto rt = build();
  auto [client, server] =
      rt.block_on(failed_handshake(client_builder(), server_builder(), "db.example.org"));
  EXPECT_EQ(client.code, TlsErrc::kVerifyFailed) << client.what;
  EXPECT_EQ(client.verify_result, X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_NE(client.what.find("hostname mismatch"), std::string::npos) << client.what;
  EXPECT_NE(client.what.find("expected host 'db.example.org'"), std::string::npos) << client.what;
  EXPECT_EQ(server.code, TlsErrc::kHandshake) << server.what;
}

TEST_P(TlsHandshake, UnknownCaIsRefused) {
  auto rt = build();
  auto [client, server] =
      rt.block_on(failed_handshake(client_builder(), server_builder(pki().unknown_server)));
  EXPECT_EQ(client.code, TlsErrc::kVerifyFailed) << client.what;
  EXPECT_NE(client.what.find("unable to get local issuer certificate"), std::string::npos)
      << client.what;
  EXPECT_EQ(server.code, TlsErrc::kHandshake) << server.what;
  EXPECT_NE(server.what.find("unknown ca"), std::string::npos) << server.what;
}

TEST_P(TlsHandshake, RequiredClientCertificateMissingIsRefused) {
  auto rt = build();
  auto server = server_builder();
  server.ca_pem(pki().ca.cert).verify(Verify::kRequireClientCert);
  auto [client, server_end] = rt.block_on(failed_handshake(client_builder(), std::move(server)));
  EXPECT_EQ(server_end.code, TlsErrc::kHandshake) << server_end.what;
  EXPECT_NE(server_end.what.find("peer did not return a certificate"), std::string::npos)
      << server_end.what;
  // TLS 1.3: the client's handshake ends before the server's verdict, which its read gets.
  EXPECT_EQ(client.code, TlsErrc::kProtocol) << client.what;
  EXPECT_NE(client.what.find("certificate required"), std::string::npos) << client.what;
}

TEST_P(TlsHandshake, RequiredClientCertificateGivenIsAccepted) {
  auto rt = build();
  auto client = client_builder();
  client.certificate_chain_pem(pki().client.cert).private_key_pem(pki().client.key);
  auto server = server_builder();
  server.ca_pem(pki().ca.cert).verify(Verify::kRequireClientCert);
  TlsConnector connector(client.build());
  TlsAcceptor acceptor(server.build());
  // What the client was asked for, and what the server received and made of it.
  struct Seen {
    std::vector<std::string> asked_cas;
    std::string peer;
    long verify_result = -1;
  };
  const Seen seen = rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<Seen> {
    auto [client, server] = co_await connected_pair(c, a);
    co_await client.write_all(std::string_view("x"));
    char byte = 0;
    EXPECT_EQ(co_await server.read(std::span(&byte, 1)), 1u);
    Seen s;
    const STACK_OF(X509_NAME)* asked = SSL_get_client_CA_list(client.native_handle());
    for (int i = 0; asked != nullptr && i < sk_X509_NAME_num(asked); ++i) {
      s.asked_cas.push_back(common_name(sk_X509_NAME_value(asked, i)));
    }
    if (const X509* cert = SSL_get0_peer_certificate(server.native_handle())) {
      s.peer = common_name(X509_get_subject_name(cert));
    }
    s.verify_result = SSL_get_verify_result(server.native_handle());
    co_return s;
  }(connector, acceptor));
  EXPECT_EQ(seen.asked_cas, std::vector<std::string>{"spool test CA"});
  EXPECT_EQ(seen.peer, "test-client");
  EXPECT_EQ(seen.verify_result, X509_V_OK);
}

// A partial wildcard (w*.example.test) names no host: only a whole leftmost label matches.
TEST_P(TlsHandshake, APartialWildcardMatchesNoHostAWholeOneDoes) {
  auto rt = build();
  auto [client, server] = rt.block_on(
      failed_handshake(client_builder(), server_builder(pki().wildcards), "www.example.test"));
  EXPECT_EQ(client.code, TlsErrc::kVerifyFailed) << client.what;
  EXPECT_EQ(client.verify_result, X509_V_ERR_HOSTNAME_MISMATCH);
  TlsConnector connector(client_builder().build());
  TlsAcceptor acceptor(server_builder(pki().wildcards).build());
  rt.block_on([](TlsConnector c, TlsAcceptor a) -> Task<void> {
    auto [client, server] = co_await connected_pair(c, a, "any.wild.test");
    EXPECT_EQ(server.server_name(), "any.wild.test");
  }(connector, acceptor));
}

TEST_P(TlsHandshake, ProtocolVersionMismatchIsRefused) {
  auto rt = build();
  auto client = client_builder();
  client.max_version(Version::kTls12);
  auto server = server_builder();
  server.min_version(Version::kTls13);
  auto [client_end, server_end] =
      rt.block_on(failed_handshake(std::move(client), std::move(server)));
  EXPECT_EQ(server_end.code, TlsErrc::kHandshake) << server_end.what;
  EXPECT_NE(server_end.what.find("unsupported protocol"), std::string::npos) << server_end.what;
  EXPECT_EQ(client_end.code, TlsErrc::kHandshake) << client_end.what;
  EXPECT_NE(client_end.what.find("protocol version"), std::string::npos) << client_end.what;
}

}  // namespace
