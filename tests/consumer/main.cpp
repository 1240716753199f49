// Built by scripts/check-install and scripts/check-package against an installed spool: exits 0
// when the installed headers and libraries (spool::spool; spool::tls through tls.cpp,
// spool::asio through asio_bridge.cpp) work. It runs a Task under block_on and spawned Tasks on
// a Runtime (JoinHandle, spool::spawn, a Sleep), so that a name the shared library fails to
// export breaks its link.
#include <chrono>
#include <cstdio>

#include "spool/spool.hpp"
#ifdef SPOOL_CONSUMER_TLS
#include "tls.hpp"
#endif
#ifdef SPOOL_CONSUMER_ASIO
#include "asio_bridge.hpp"
#endif

namespace {

spool::Task<int> answer() { co_return 42; }

spool::Task<int> doubled() { co_return 2 * co_await answer(); }

spool::Task<int> spawned_sum() {
  spool::JoinHandle<int> a = spool::spawn(doubled());
  spool::JoinHandle<int> b = spool::spawn(answer());
  co_await spool::sleep(std::chrono::milliseconds(1));
  co_return co_await a + co_await b;
}

}  // namespace

int main() {
  const int result = spool::block_on(doubled());
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  const int sum = rt.block_on(spawned_sum());
  if (result != 84 || sum != 126) {
    std::fprintf(stderr, "consumer: expected 84 and 126, got %d and %d\n", result, sum);
    return 1;
  }
  std::puts("consumer: block_on(doubled()) == 84, spawned sum on a Runtime == 126");
#ifdef SPOOL_CONSUMER_TLS
  make_tls_connector();
  std::puts("consumer: a spool::tls::TlsConnector made");
#endif
#ifdef SPOOL_CONSUMER_ASIO
  if (!wait_for_an_asio_timer()) {
    std::fputs("consumer: the Asio timer's wait did not complete\n", stderr);
    return 1;
  }
  std::puts("consumer: an Asio timer awaited through spool::asio::use_task");
#endif
  return 0;
}
