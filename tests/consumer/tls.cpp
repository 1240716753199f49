// The consumer's TLS part (tests/consumer/CMakeLists.txt): spool::tls links, with OpenSSL.
#include "tls.hpp"

#include "spool/tls.hpp"

void make_tls_connector() {
  spool::tls::TlsContextBuilder client(spool::tls::Role::kClient);
  client.verify(spool::tls::Verify::kNone);
  const spool::tls::TlsConnector connector(client.build());
}
