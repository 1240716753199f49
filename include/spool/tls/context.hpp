// spool::tls::TlsContext and its builder: certificates, keys, trusted CAs, verification,
// ALPN and protocol versions, shared by every connection made from it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "spool/config.hpp"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX (spool's headers do not include OpenSSL's)

namespace spool::tls {

namespace detail {
struct ContextExtras;  // what the SSL_CTX's callbacks read (src/tls/context.cpp)
}  // namespace detail

/// Which side of the handshake a context is for.
enum class Role { kClient, kServer };

/// A TLS protocol version (for min_version / max_version).
enum class Version { kTls12, kTls13 };

/// How the peer's certificate is checked.
enum class Verify {
  /// Client: the server's certificate must chain to a trusted CA and name the host given to
  /// connect (a client's default). Server: a client certificate is asked for and, if sent,
  /// verified (give the server the CAs it trusts: ca_file, ca_pem).
  kPeer,
  /// No check: a server's default (it asks for no client certificate); a client then trusts
  /// any server (for tests only).
  kNone,
  /// Server: as kPeer, and a client that sends no certificate fails the handshake.
  kRequireClientCert,
};

/// An immutable, shareable TLS configuration (an SSL_CTX): copy it freely; connections made
/// from it keep it alive. Thread-safe. Made by TlsContextBuilder.
class TlsContext {
 public:
  /// Client or server.
  Role role() const noexcept { return role_; }
  /// The OpenSSL SSL_CTX, for settings spool does not wrap (change it before the first
  /// connection only: OpenSSL reads it from every thread after that).
  ssl_ctx_st* native_handle() const noexcept { return ctx_.get(); }

 private:
  friend class TlsContextBuilder;
  TlsContext(std::shared_ptr<ssl_ctx_st> ctx, Role role) noexcept
      : ctx_(std::move(ctx)), role_(role) {}
  std::shared_ptr<ssl_ctx_st> ctx_;
  Role role_;
};

/// Builds a TlsContext. Each setter applies at once and throws TlsError (TlsErrc::kConfig)
/// naming the file or setting and OpenSSL's reason when it is refused; build() checks the
/// whole (a server needs a certificate and its key, which must match, and the CAs of the
/// client certificates it verifies). Defaults: TLS 1.2 at least, Verify::kPeer for a client
/// (with the system's CA store until a CA is given), Verify::kNone for a server,
/// renegotiation refused. Move-only (a copy would share the SSL_CTX being built).
class TlsContextBuilder {
 public:
  /// A builder for `role`'s context.
  explicit TlsContextBuilder(Role role);
  /// Takes over the other's settings; the moved-from builder is not to be used.
  TlsContextBuilder(TlsContextBuilder&&) noexcept = default;
  /// Takes over the other's settings.
  TlsContextBuilder& operator=(TlsContextBuilder&&) noexcept = default;

  /// The certificate chain (leaf first) from a PEM file. The `_file` setters throw
  /// std::invalid_argument for a path with a NUL byte (OpenSSL would read another file).
  TlsContextBuilder& certificate_chain_file(const std::filesystem::path& pem_file);
  /// The certificate chain (leaf first) from PEM text.
  TlsContextBuilder& certificate_chain_pem(std::string_view pem);
  /// The private key of the certificate from a PEM file (unencrypted).
  TlsContextBuilder& private_key_file(const std::filesystem::path& pem_file);
  /// The private key of the certificate from PEM text (unencrypted).
  TlsContextBuilder& private_key_pem(std::string_view pem);
  /// Trusts the CA certificates of a PEM file (replaces the system default); a server names
  /// them in its request for a client certificate.
  TlsContextBuilder& ca_file(const std::filesystem::path& pem_file);
  /// Trusts the CA certificates of PEM text (as ca_file).
  TlsContextBuilder& ca_pem(std::string_view pem);
  /// Trusts the system's CA store too (Debian: /etc/ssl/certs).
  TlsContextBuilder& system_ca();
  /// How the peer is verified (see Verify).
  TlsContextBuilder& verify(Verify mode);
  /// The ALPN protocols, most preferred first ("h2", "http/1.1"): a client offers them, a
  /// server picks the first of its list the client offers (none in common: no ALPN).
  TlsContextBuilder& alpn(std::vector<std::string> protocols);
  /// The lowest protocol version accepted.
  TlsContextBuilder& min_version(Version v);
  /// The highest protocol version offered.
  TlsContextBuilder& max_version(Version v);
  /// The TLS 1.3 cipher suites, in OpenSSL's syntax ("TLS_AES_128_GCM_SHA256").
  TlsContextBuilder& ciphersuites(const std::string& suites);
  /// The context. The builder is spent: any later call throws std::logic_error.
  TlsContext build();

 private:
  ssl_ctx_st* live() const;  // the context being built; throws after build()
  void load_ca_pem(std::string_view pem, const std::string& from);
  std::shared_ptr<detail::ContextExtras> extras_;
  std::shared_ptr<ssl_ctx_st> ctx_;  // its deleter keeps extras_ alive as long as it lives
  Role role_;
  Verify verify_;
  bool has_ca_ = false;
  bool has_cert_ = false;
  bool has_key_ = false;
};

}  // namespace spool::tls
