// Built by scripts/check-install against an installed spool: exits 0 when the installed
// headers and libraries (spool::spool, spool::tls) work.
#include <cstdio>

#include "spool/spool.hpp"
#include "spool/tls.hpp"

namespace {

spool::Task<int> answer() { co_return 42; }

spool::Task<int> doubled() { co_return 2 * co_await answer(); }

}  // namespace

int main() {
  const int result = spool::block_on(doubled());
  if (result != 84) {
    std::fprintf(stderr, "consumer: expected 84, got %d\n", result);
    return 1;
  }
  std::puts("consumer: spool::block_on(doubled()) == 84");
  // spool::tls links (with OpenSSL): a client context and its connector.
  spool::tls::TlsContextBuilder client(spool::tls::Role::kClient);
  client.verify(spool::tls::Verify::kNone);
  const spool::tls::TlsConnector connector(client.build());
  std::puts("consumer: a spool::tls::TlsConnector made");
  return 0;
}
