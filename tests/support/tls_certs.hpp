// Test certificates made at run time with OpenSSL's API (nothing committed, nothing that
// expires in the repository): a CA, certificates it signs (for localhost, expired, a
// client's), and a second CA that nobody trusts. spool-bench's W17 uses it too.
#pragma once

#include <string>

namespace spool_tls_test {

/// A certificate and its private key, as PEM text.
struct Identity {
  std::string cert;
  std::string key;
};

/// The test PKI: made once per process (key generation is the slow part).
struct Pki {
  Identity ca;              ///< the trusted CA (self-signed)
  Identity server;          ///< CN localhost, SAN DNS:localhost and IP:127.0.0.1, signed by ca
  Identity expired;         ///< as server, valid from 2 days ago to 1 day ago
  Identity client;          ///< CN test-client, signed by ca (clientAuth)
  Identity other_ca;        ///< a CA no context trusts (self-signed)
  Identity unknown_server;  ///< as server, signed by other_ca
  Identity wildcards;       ///< SAN DNS:w*.example.test (partial) and DNS:*.wild.test, by ca
};

/// The process's test PKI.
const Pki& pki();

/// A new self-signed certificate (a CA too) for localhost (SAN DNS:localhost), valid from a
/// day ago for 30 days: W17's (spool-bench's tls_echo).
Identity self_signed_localhost();

}  // namespace spool_tls_test
