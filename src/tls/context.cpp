// TlsContextBuilder: an SSL_CTX configured setter by setter, each refusal reported at once.
#include "spool/tls/context.hpp"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "tls/openssl_errors.hpp"

namespace spool::tls {

namespace detail {

// What the context's callbacks read: it lives as long as the SSL_CTX (its deleter owns it).
struct ContextExtras {
  std::vector<unsigned char> alpn_wire;  // a server's protocols in ALPN's wire format
};

}  // namespace detail

namespace {

// A server's ALPN choice: its own first protocol that the client offers.
int select_alpn(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
                unsigned in_len, void* arg) {
  const auto* extras = static_cast<const detail::ContextExtras*>(arg);
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_len, extras->alpn_wire.data(),
                            static_cast<unsigned>(extras->alpn_wire.size()), in,
                            in_len) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // nothing in common: the handshake goes on without ALPN
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

int openssl_version(Version v) { return v == Version::kTls12 ? TLS1_2_VERSION : TLS1_3_VERSION; }

// A read-only memory BIO over `pem` (freed at scope exit).
struct PemBio {
  explicit PemBio(std::string_view pem)
      : bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))) {
    if (bio == nullptr) throw std::bad_alloc();
  }
  ~PemBio() { BIO_free(bio); }
  PemBio(const PemBio&) = delete;
  PemBio& operator=(const PemBio&) = delete;
  BIO* bio;
};

// The next certificate of `in`, or nullptr at the end of the text (OpenSSL's "no start line"
// left in its error queue). Any other failure (a corrupt block, a block cut short) throws
// naming `setting`: stopping there would drop the rest of the text silently, where
// SSL_CTX_use_certificate_chain_file, whose loop this is, refuses the file.
X509* next_certificate(BIO* in, const char* setting) {
  ERR_clear_error();
  if (X509* cert = PEM_read_bio_X509(in, nullptr, nullptr, nullptr)) return cert;
  const unsigned long err = ERR_peek_last_error();
  if (ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE) {
    return nullptr;
  }
  detail::throw_config_error(std::string(setting) +
                             ": a certificate in the PEM text given cannot be read");
}

// `f` as OpenSSL takes it, a C string. Throws std::invalid_argument naming `setting` when it
// holds a NUL byte: OpenSSL would end the path there and read another file.
const char* openssl_path(const std::filesystem::path& f, const char* setting) {
  if (f.native().find('\0') != std::string::npos) {
    throw std::invalid_argument(std::string("spool::tls::TlsContextBuilder::") + setting +
                                ": the path holds a NUL byte, where OpenSSL would end it and "
                                "read another file; remove the NUL");
  }
  return f.c_str();
}

}  // namespace

TlsContextBuilder::TlsContextBuilder(Role role)
    : extras_(std::make_shared<detail::ContextExtras>()),
      role_(role),
      verify_(role == Role::kClient ? Verify::kPeer : Verify::kNone) {
  SSL_CTX* raw = SSL_CTX_new(role == Role::kClient ? TLS_client_method() : TLS_server_method());
  if (raw == nullptr) detail::throw_config_error("SSL_CTX_new failed");
  ctx_ = std::shared_ptr<SSL_CTX>(raw, [extras = extras_](SSL_CTX* c) { SSL_CTX_free(c); });
  // Renegotiation (TLS 1.2) is refused: a peer's request gets a no_renegotiation alert.
  SSL_CTX_set_options(raw, SSL_OP_NO_RENEGOTIATION);
  // An idle connection frees OpenSSL's record buffers (about 34 KiB) until it is used again.
  SSL_CTX_set_mode(raw, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION);
  SSL_CTX_set_verify(raw, role == Role::kClient ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
}

TlsContextBuilder& TlsContextBuilder::certificate_chain_file(const std::filesystem::path& f) {
  if (SSL_CTX_use_certificate_chain_file(live(), openssl_path(f, "certificate_chain_file")) != 1) {
    detail::throw_config_error("cannot load the certificate chain from '" + f.string() + "'");
  }
  has_cert_ = true;
  return *this;
}

TlsContextBuilder& TlsContextBuilder::certificate_chain_pem(std::string_view pem) {
  PemBio in(pem);
  X509* leaf = PEM_read_bio_X509_AUX(in.bio, nullptr, nullptr, nullptr);
  if (leaf == nullptr || SSL_CTX_use_certificate(live(), leaf) != 1) {
    X509_free(leaf);
    detail::throw_config_error("cannot load the certificate from the PEM text given");
  }
  X509_free(leaf);
  SSL_CTX_clear_chain_certs(live());
  while (X509* ca = next_certificate(in.bio, "certificate_chain_pem")) {
    if (SSL_CTX_add0_chain_cert(live(), ca) != 1) {  // takes `ca` when it succeeds
      X509_free(ca);
      detail::throw_config_error("cannot add a chain certificate from the PEM text given");
    }
  }
  ERR_clear_error();  // the end of the PEM text reads as "no start line"
  has_cert_ = true;
  return *this;
}

TlsContextBuilder& TlsContextBuilder::private_key_file(const std::filesystem::path& f) {
  if (SSL_CTX_use_PrivateKey_file(live(), openssl_path(f, "private_key_file"), SSL_FILETYPE_PEM) !=
      1) {
    detail::throw_config_error("cannot load the private key from '" + f.string() + "'");
  }
  has_key_ = true;
  return *this;
}

TlsContextBuilder& TlsContextBuilder::private_key_pem(std::string_view pem) {
  PemBio in(pem);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(in.bio, nullptr, nullptr, nullptr);
  const bool ok = key != nullptr && SSL_CTX_use_PrivateKey(live(), key) == 1;
  EVP_PKEY_free(key);
  if (!ok) detail::throw_config_error("cannot load the private key from the PEM text given");
  has_key_ = true;
  return *this;
}

TlsContextBuilder& TlsContextBuilder::ca_file(const std::filesystem::path& f) {
  // A server also names them in its certificate request (a client picks its certificate).
  const char* path = openssl_path(f, "ca_file");
  if (SSL_CTX_load_verify_locations(live(), path, nullptr) != 1 ||
      (role_ == Role::kServer &&
       SSL_add_file_cert_subjects_to_stack(SSL_CTX_get_client_CA_list(live()), path) != 1)) {
    detail::throw_config_error("cannot load the CA certificates from '" + f.string() + "'");
  }
  has_ca_ = true;
  return *this;
}

TlsContextBuilder& TlsContextBuilder::ca_pem(std::string_view pem) {
  PemBio in(pem);
  X509_STORE* store = SSL_CTX_get_cert_store(live());
  int added = 0;
  while (X509* ca = next_certificate(in.bio, "ca_pem")) {
    const bool ok = X509_STORE_add_cert(store, ca) == 1 &&
                    (role_ == Role::kClient || SSL_CTX_add_client_CA(live(), ca) == 1);
    X509_free(ca);  // the store keeps its own reference
    if (!ok) detail::throw_config_error("cannot add a CA certificate from the PEM text given");
    ++added;
  }
  if (added == 0) detail::throw_config_error("no CA certificate in the PEM text given");
  ERR_clear_error();  // the end of the PEM text reads as "no start line"
  has_ca_ = true;
  return *this;
}

TlsContextBuilder& TlsContextBuilder::system_ca() {
  if (SSL_CTX_set_default_verify_paths(live()) != 1) {
    detail::throw_config_error("cannot load the system's CA store");
  }
  has_ca_ = true;
  return *this;
}

TlsContextBuilder& TlsContextBuilder::verify(Verify mode) {
  if (mode == Verify::kRequireClientCert && role_ == Role::kClient) {
    throw std::invalid_argument(
        "spool::tls::TlsContextBuilder::verify: Verify::kRequireClientCert is for a server "
        "context; a client verifies its server with Verify::kPeer");
  }
  int flags = SSL_VERIFY_NONE;
  if (mode != Verify::kNone) flags = SSL_VERIFY_PEER;
  if (mode == Verify::kRequireClientCert) flags |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  SSL_CTX_set_verify(live(), flags, nullptr);
  verify_ = mode;
  return *this;
}

TlsContextBuilder& TlsContextBuilder::alpn(std::vector<std::string> protocols) {
  std::vector<unsigned char> wire;
  for (const std::string& p : protocols) {
    if (p.empty() || p.size() > 255) {
      throw std::invalid_argument("spool::tls::TlsContextBuilder::alpn: the protocol '" + p +
                                  "' must be 1 to 255 bytes long");
    }
    wire.push_back(static_cast<unsigned char>(p.size()));
    wire.insert(wire.end(), p.begin(), p.end());
  }
  if (role_ == Role::kClient) {
    // (SSL_CTX_set_alpn_protos returns 0 on success, unlike its neighbours.)
    if (SSL_CTX_set_alpn_protos(live(), wire.data(), static_cast<unsigned>(wire.size())) != 0) {
      detail::throw_config_error("cannot set the ALPN protocols");
    }
  } else {
    extras_->alpn_wire = std::move(wire);
    SSL_CTX_set_alpn_select_cb(live(), select_alpn, extras_.get());
  }
  return *this;
}

TlsContextBuilder& TlsContextBuilder::min_version(Version v) {
  if (SSL_CTX_set_min_proto_version(live(), openssl_version(v)) != 1) {
    detail::throw_config_error("cannot set the minimum protocol version");
  }
  return *this;
}

TlsContextBuilder& TlsContextBuilder::max_version(Version v) {
  if (SSL_CTX_set_max_proto_version(live(), openssl_version(v)) != 1) {
    detail::throw_config_error("cannot set the maximum protocol version");
  }
  return *this;
}

TlsContextBuilder& TlsContextBuilder::ciphersuites(const std::string& suites) {
  if (SSL_CTX_set_ciphersuites(live(), suites.c_str()) != 1) {
    detail::throw_config_error("the TLS 1.3 cipher suites '" + suites + "' are refused");
  }
  return *this;
}

SSL_CTX* TlsContextBuilder::live() const {
  if (!ctx_) {
    throw std::logic_error(
        "spool::tls::TlsContextBuilder: used after build(); make a new builder for another "
        "context");
  }
  return ctx_.get();
}

TlsContext TlsContextBuilder::build() {
  (void)live();
  if (has_cert_ != has_key_) {
    throw TlsError(TlsErrc::kConfig, std::string("spool::tls::TlsContextBuilder::build: a ") +
                                         (has_cert_ ? "certificate without its private key"
                                                    : "private key without its certificate") +
                                         "; give both (certificate_chain_* and private_key_*)");
  }
  if (role_ == Role::kServer && !has_cert_) {
    throw TlsError(TlsErrc::kConfig,
                   "spool::tls::TlsContextBuilder::build: a server context needs a certificate "
                   "and its private key (certificate_chain_file / private_key_file)");
  }
  if (role_ == Role::kServer && verify_ != Verify::kNone && !has_ca_) {
    throw TlsError(TlsErrc::kConfig,
                   "spool::tls::TlsContextBuilder::build: a server that verifies client "
                   "certificates (Verify::kPeer, kRequireClientCert) needs the CAs it trusts "
                   "for them: give ca_file / ca_pem / system_ca, or verify(Verify::kNone)");
  }
  if (has_cert_ && SSL_CTX_check_private_key(live()) != 1) {
    detail::throw_config_error("build: the private key does not match the certificate");
  }
  if (role_ == Role::kClient && verify_ == Verify::kPeer && !has_ca_) system_ca();
  return TlsContext(std::move(ctx_), role_);
}

}  // namespace spool::tls
