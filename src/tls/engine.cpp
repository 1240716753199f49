// Engine: an SSL object between memory BIOs, and the messages of its failures.
#include "spool/tls/engine.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <string>

#include "tls/openssl_errors.hpp"

namespace spool::tls::detail {

namespace {

// The most plaintext one write encrypts: one record (a longer write is one write per record).
constexpr std::size_t kMaxRecordPlaintext = 16 * 1024;

bool is_ip_literal(const std::string& name) {
  unsigned char addr[sizeof(in6_addr)];
  return inet_pton(AF_INET, name.c_str(), addr) == 1 ||
         inet_pton(AF_INET6, name.c_str(), addr) == 1;
}

}  // namespace

Engine::Engine(const TlsContext& ctx, const std::string& server_name)
    : ssl_(ctx.native_handle() == nullptr ? nullptr : SSL_new(ctx.native_handle())),
      client_(ctx.role() == Role::kClient) {
  if (ctx.native_handle() == nullptr) {
    throw std::logic_error(
        "spool::tls: a connection from a moved-from TlsConnector, TlsAcceptor or TlsContext; "
        "use the object it was moved to");
  }
  if (ssl_ == nullptr) throw std::bad_alloc();
  network_in_ = BIO_new(BIO_s_mem());
  network_out_ = BIO_new(BIO_s_mem());
  if (network_in_ == nullptr || network_out_ == nullptr) {
    BIO_free(network_in_);
    BIO_free(network_out_);
    SSL_free(ssl_);
    throw std::bad_alloc();
  }
  SSL_set_bio(ssl_, network_in_, network_out_);  // ssl_ owns both from here on
  if (!client_) {
    SSL_set_accept_state(ssl_);
    return;
  }
  SSL_set_connect_state(ssl_);
  // OpenSSL takes the name as a C string: "localhost\0.evil.example" would be checked (and
  // sent as SNI) as "localhost", and "127.0.0.1\0junk" as 127.0.0.1.
  if (const std::size_t nul = server_name.find('\0'); nul != std::string::npos) {
    SSL_free(ssl_);
    throw std::invalid_argument(
        "spool::tls::TlsConnector::connect: the server name has a NUL byte at offset " +
        std::to_string(nul) + " (after '" + server_name.substr(0, nul) +
        "'): no host name has one, and OpenSSL would check only the part before it");
  }
  const bool verifies = (SSL_get_verify_mode(ssl_) & SSL_VERIFY_PEER) != 0;
  if (verifies && server_name.empty()) {
    SSL_free(ssl_);
    throw std::invalid_argument(
        "spool::tls::TlsConnector::connect: no server name: a verifying client checks the "
        "server's certificate against it (give the host name, or an IP address)");
  }
  const bool ip = is_ip_literal(server_name);
  // Only a whole leftmost label is a wildcard (RFC 6125 6.4.3): w*.example.org names nothing.
  SSL_set_hostflags(ssl_, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  // SNI carries host names only (RFC 6066), never an address.
  const bool ok =
      (ip || server_name.empty() || SSL_set_tlsext_host_name(ssl_, server_name.c_str()) == 1) &&
      (!verifies ||
       (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), server_name.c_str()) == 1
           : SSL_set1_host(ssl_, server_name.c_str()) == 1));
  if (!ok) {
    SSL_free(ssl_);
    throw_config_error("the server name '" + server_name + "' is refused");
  }
  if (verifies) expected_host_ = server_name;
}

Engine::~Engine() { SSL_free(ssl_); }

bool Engine::handshake() {
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) return true;
  const int err = SSL_get_error(ssl_, r);
  if (err != SSL_ERROR_WANT_READ) throw_failure(err, "handshake");
  if (transport_ended_) throw_unexpected_eof("handshake");
  return false;
}

std::optional<std::size_t> Engine::read(std::byte* data, std::size_t len) {
  if (len == 0) return 0;
  ERR_clear_error();
  std::size_t n = 0;
  if (SSL_read_ex(ssl_, data, len, &n) == 1) return n;
  const int err = SSL_get_error(ssl_, 0);
  if (err == SSL_ERROR_ZERO_RETURN) return 0;  // the peer's close_notify
  if (err != SSL_ERROR_WANT_READ) throw_failure(err, "read");
  if (transport_ended_) throw_unexpected_eof("read");
  return std::nullopt;
}

std::size_t Engine::write(const std::byte* data, std::size_t len) {
  if (close_notify_sent_) {
    throw TlsError(TlsErrc::kClosed,
                   "spool::tls::TlsStream::write: this side already sent close_notify "
                   "(shutdown); nothing can be written after it");
  }
  if (len == 0) return 0;
  ERR_clear_error();
  std::size_t n = 0;
  if (SSL_write_ex(ssl_, data, std::min(len, kMaxRecordPlaintext), &n) == 1) return n;
  throw_failure(SSL_get_error(ssl_, 0), "write");
}

void Engine::close_notify() {
  if (close_notify_sent_) return;
  close_notify_sent_ = true;
  ERR_clear_error();
  const int r = SSL_shutdown(ssl_);  // 0: sent, the peer's not yet seen; 1: both seen
  if (r < 0) throw_failure(SSL_get_error(ssl_, r), "shutdown");
}

void Engine::input_received(std::size_t n) {
  if (n == 0) {
    transport_ended_ = true;
    return;
  }
  // A memory BIO grows as needed: it takes every byte or fails to allocate.
  if (BIO_write(network_in_, input_, static_cast<int>(n)) != static_cast<int>(n)) {
    throw std::bad_alloc();
  }
}

std::span<const std::byte> Engine::output() {
  if (output_begin_ == output_end_) {
    output_begin_ = output_end_ = 0;
    if (BIO_ctrl_pending(network_out_) > 0) {
      const int n = BIO_read(network_out_, output_, static_cast<int>(kOutputSize));
      if (n > 0) output_end_ = static_cast<std::size_t>(n);
    }
  }
  return {output_ + output_begin_, output_end_ - output_begin_};
}

bool Engine::has_output() const noexcept {
  return output_begin_ != output_end_ || BIO_ctrl_pending(network_out_) > 0;
}

std::string_view Engine::alpn_protocol() const noexcept {
  const unsigned char* p = nullptr;
  unsigned len = 0;
  SSL_get0_alpn_selected(ssl_, &p, &len);
  return p == nullptr ? std::string_view()
                      : std::string_view(reinterpret_cast<const char*>(p), len);
}

std::string_view Engine::version() const noexcept { return SSL_get_version(ssl_); }

std::string_view Engine::server_name() const noexcept {
  const char* name = SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name);
  return name == nullptr ? std::string_view() : std::string_view(name);
}

void Engine::throw_failure(int err, const char* during) {
  const std::string reasons = take_openssl_reasons(
      err == SSL_ERROR_ZERO_RETURN ? "the peer sent close_notify" : "no reason given by OpenSSL");
  const bool handshaking = std::string_view(during) == "handshake";
  const long verify = SSL_get_verify_result(ssl_);
  if (handshaking && verify != X509_V_OK) {
    std::string what = std::string("spool::tls: the handshake failed: the ") +
                       (client_ ? "server's" : "client's") +
                       " certificate failed verification: " + X509_verify_cert_error_string(verify);
    if (!expected_host_.empty()) what += " (expected host '" + expected_host_ + "')";
    throw TlsError(TlsErrc::kVerifyFailed, what + " [OpenSSL: " + reasons + "]", verify);
  }
  std::string what = std::string("spool::tls: ") + (handshaking ? "the handshake" : during) +
                     " failed: " + reasons;
  if (handshaking && !expected_host_.empty()) what += " (connecting to '" + expected_host_ + "')";
  throw TlsError(handshaking ? TlsErrc::kHandshake : TlsErrc::kProtocol, what);
}

void Engine::throw_unexpected_eof(const char* during) {
  throw TlsError(TlsErrc::kUnexpectedEof,
                 std::string("spool::tls: ") + during +
                     ": the peer closed the connection without sending close_notify (the "
                     "data may have been cut short)");
}

}  // namespace spool::tls::detail
