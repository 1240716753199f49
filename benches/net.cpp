// W10 tcp_echo: an echo server and 64 clients in the same runtime on 127.0.0.1 (an
// ephemeral port), TCP_NODELAY on both ends; each client does 2,000 round trips of a
// 64-byte message (write_all, then read_exact). The 64 connections are made first, untimed;
// the timed phase runs from the spawn of the client tasks to the end of all of them. The
// code shape of the tokio peer (shared/peers/tokio/src/main.rs). Run on each I/O backend:
// `tcp_echo` is epoll's figure, `tcp_echo@io_uring` io_uring's (compare-peers compares both
// with the peers' tcp_echo).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <system_error>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "spool/net.hpp"
#include "spool/runtime.hpp"

namespace spool_bench {

namespace {

constexpr std::size_t kClients = 64;
constexpr std::size_t kRoundTrips = 2'000;

spool::Task<void> w10_echo(spool::net::TcpStream s) {
  std::array<std::uint8_t, 1024> buf{};
  for (;;) {
    const std::size_t n = co_await s.read(buf);
    if (n == 0) co_return;
    co_await s.write_all(std::span(buf.data(), n));
  }
}

spool::Task<void> w10_accept_loop(spool::net::TcpListener listener) {
  for (;;) {
    auto [s, peer] = co_await listener.accept();
    s.set_nodelay(true);
    (void)spool::spawn(w10_echo(std::move(s)));
  }
}

spool::Task<Clock::duration> w10_round(spool::net::SocketAddr addr) {
  std::vector<spool::net::TcpStream> streams;
  streams.reserve(kClients);
  for (std::size_t c = 0; c < kClients; ++c) {
    streams.push_back(co_await spool::net::TcpStream::connect(addr));
    streams.back().set_nodelay(true);
  }
  co_return co_await timed_echo_clients(std::move(streams), kRoundTrips);
}

void w10_tcp_echo_on(Config cfg, const char* name) {
  spool::Runtime rt = make_runtime(cfg);
  auto listener = rt.block_on([]() -> spool::Task<spool::net::TcpListener> {
    co_return spool::net::TcpListener::bind("127.0.0.1:0");
  }());
  const spool::net::SocketAddr addr = listener.local_addr();
  (void)rt.spawn(w10_accept_loop(std::move(listener)));
  auto samples = measure(cfg, [&] { return rt.block_on(w10_round(addr)); });
  report_ns_per_op(name, samples, kClients * kRoundTrips);
}

void w10_tcp_echo(const Config& cfg) { on_each_backend(cfg, "tcp_echo", w10_tcp_echo_on); }

}  // namespace

std::vector<Workload> net_workloads() { return {{"W10", "tcp_echo", w10_tcp_echo}}; }

}  // namespace spool_bench
