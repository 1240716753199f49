// The test PKI of tls_certs.hpp, with OpenSSL's EVP and X509 API.
#include "support/tls_certs.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <stdexcept>

namespace spool_tls_test {

namespace {

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what + " failed");
}

std::string pem_of(int (*write)(BIO*, void*), void* obj) {
  BIO* bio = BIO_new(BIO_s_mem());
  check(bio != nullptr && write(bio, obj) == 1, "PEM writing");
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<std::size_t>(len));
  BIO_free(bio);
  return out;
}

// The key and certificate, alive while an identity is made (the issuer's are read back).
struct Made {
  EVP_PKEY* key;
  X509* cert;
};

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr && X509_add_ext(cert, ext, -1) == 1, "adding an extension");
  X509_EXTENSION_free(ext);
}

// A P-256 key and a certificate for `cn`, valid from now + `from_days` to now + `to_days`,
// signed by `issuer` (itself when null).
Made make(const char* cn, const Made* issuer, long from_days, long to_days, bool ca,
          const char* san, const char* usage) {
  static long serial = 1;
  Made m{EVP_EC_gen("P-256"), X509_new()};
  check(m.key != nullptr && m.cert != nullptr, "key generation");
  X509_set_version(m.cert, X509_VERSION_3);
  ASN1_INTEGER_set(X509_get_serialNumber(m.cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(m.cert), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(m.cert), to_days * 86400);
  X509_NAME* name = X509_get_subject_name(m.cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(m.cert, issuer ? X509_get_subject_name(issuer->cert) : name);
  X509_set_pubkey(m.cert, m.key);
  X509* issuer_cert = issuer ? issuer->cert : m.cert;
  add_ext(m.cert, issuer_cert, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  add_ext(m.cert, issuer_cert, NID_key_usage,
          ca ? "critical,digitalSignature,keyCertSign,cRLSign" : "critical,digitalSignature");
  if (usage != nullptr) add_ext(m.cert, issuer_cert, NID_ext_key_usage, usage);
  if (san != nullptr) add_ext(m.cert, issuer_cert, NID_subject_alt_name, san);
  check(X509_sign(m.cert, issuer ? issuer->key : m.key, EVP_sha256()) > 0, "signing");
  return m;
}

Identity pem(const Made& m) {
  return {
      pem_of([](BIO* b, void* x) { return PEM_write_bio_X509(b, static_cast<X509*>(x)); }, m.cert),
      pem_of(
          [](BIO* b, void* k) {
            return PEM_write_bio_PrivateKey(b, static_cast<EVP_PKEY*>(k), nullptr, nullptr, 0,
                                            nullptr, nullptr);
          },
          m.key)};
}

void free_made(const Made& m) {
  X509_free(m.cert);
  EVP_PKEY_free(m.key);
}

Pki make_pki() {
  const char* localhost = "DNS:localhost,IP:127.0.0.1";
  Made ca = make("spool test CA", nullptr, -1, 30, true, nullptr, nullptr);
  Made other = make("spool untrusted CA", nullptr, -1, 30, true, nullptr, nullptr);
  Made server = make("localhost", &ca, -1, 30, false, localhost, "serverAuth");
  Made expired = make("localhost", &ca, -2, -1, false, localhost, "serverAuth");
  Made client = make("test-client", &ca, -1, 30, false, nullptr, "clientAuth");
  Made unknown = make("localhost", &other, -1, 30, false, localhost, "serverAuth");
  Made wildcards =
      make("wildcards", &ca, -1, 30, false, "DNS:w*.example.test,DNS:*.wild.test", "serverAuth");
  Pki p{pem(ca), pem(server), pem(expired), pem(client), pem(other), pem(unknown), pem(wildcards)};
  for (const Made* m : {&ca, &other, &server, &expired, &client, &unknown, &wildcards}) {
    free_made(*m);
  }
  return p;
}

}  // namespace

Identity self_signed_localhost() {
  const Made m = make("localhost", nullptr, -1, 30, true, "DNS:localhost", nullptr);
  Identity id = pem(m);
  free_made(m);
  return id;
}

const Pki& pki() {
  static const Pki instance = make_pki();
  return instance;
}

}  // namespace spool_tls_test
