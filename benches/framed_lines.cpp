// W19 framed_lines: 64 client connections on 127.0.0.1 (an ephemeral port, default socket
// options); client c writes 20,480 lines of 63 bytes and "\n" (line j: 'a' + (c + j) % 26,
// 63 times) as 320 write_alls of 64 lines, then shuts down its write side; one server task
// per connection reads them through FramedRead<TcpStream, LinesCodec(1024)>, checks each
// line and counts them. The connections are made first, untimed (each accepted at once,
// its peer address checked so that server task c reads client c); the timed phase runs
// from the spawn of the 128 tasks to the end of all of them. The code shape of the tokio
// peer (shared/peers/tokio/src/main.rs). Op = one line.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "spool/codec.hpp"
#include "spool/net.hpp"
#include "spool/runtime.hpp"

namespace spool_bench {

namespace {

constexpr std::size_t kClients = 64;
constexpr std::size_t kWrites = 320;
constexpr std::size_t kLinesPerWrite = 64;
constexpr std::size_t kLineLength = 63;  // and "\n"
constexpr std::size_t kMaxLine = 1024;
constexpr std::size_t kLinesPerClient = kWrites * kLinesPerWrite;  // 20,480
constexpr std::size_t kTotalLines = kClients * kLinesPerClient;    // 1,310,720

// The byte that fills line j of client c.
char line_byte(std::size_t c, std::size_t j) { return static_cast<char>('a' + (c + j) % 26); }

// True when `line` is line j of client c: the tokio peer's check, in its shape (the length
// first, then `all` over the 63 bytes, a count the compiler knows, as rustc does there). A
// plain function, not the coroutine's loop: g++ keeps a coroutine body's locals in its frame,
// so the same loop there stored its index and flag to memory on every byte.
bool line_ok(std::size_t c, std::size_t j, const std::string& line) {
  const char want = line_byte(c, j);
  return line.size() == kLineLength &&
         std::all_of(line.data(), line.data() + kLineLength, [want](char b) { return b == want; });
}

// The 26 distinct writes: write w of client c is buffer (c + 64 w) % 26, whose line i is
// filled with line_byte(that index, i). Made before timing.
using WriteBuffers = std::array<std::string, 26>;
WriteBuffers make_write_buffers() {
  WriteBuffers bufs;
  for (std::size_t k = 0; k < bufs.size(); ++k) {
    for (std::size_t i = 0; i < kLinesPerWrite; ++i) {
      bufs[k].append(kLineLength, line_byte(k, i));
      bufs[k].push_back('\n');
    }
  }
  return bufs;
}

spool::Task<std::size_t> w19_server(std::size_t c, spool::net::TcpStream s) {
  spool::codec::FramedRead lines(std::move(s), spool::codec::LinesCodec(kMaxLine));
  std::size_t j = 0;
  while (auto line = co_await spool::next(lines)) {
    check_in_task(line_ok(c, j, *line), "framed_lines: a wrong line");
    ++j;
  }
  co_return j;
}

spool::Task<void> w19_client(std::size_t c, spool::net::TcpStream s, const WriteBuffers& bufs) {
  for (std::size_t w = 0; w < kWrites; ++w) {
    co_await s.write_all(bufs[(c + kLinesPerWrite * w) % bufs.size()]);
  }
  s.shutdown();
}

spool::Task<Clock::duration> w19_round(spool::net::TcpListener& listener,
                                       const WriteBuffers& bufs) {
  const spool::net::SocketAddr addr = listener.local_addr();
  std::vector<std::pair<spool::net::TcpStream, spool::net::TcpStream>> pairs;
  pairs.reserve(kClients);
  for (std::size_t c = 0; c < kClients; ++c) {
    auto client = co_await spool::net::TcpStream::connect(addr);
    auto [server, peer] = co_await listener.accept();
    check(peer == client.local_addr(), "framed_lines: accepted a foreign connection");
    pairs.emplace_back(std::move(client), std::move(server));
  }
  const auto t0 = Clock::now();
  std::vector<spool::JoinHandle<std::size_t>> servers;
  std::vector<spool::JoinHandle<void>> clients;
  servers.reserve(kClients);
  clients.reserve(kClients);
  for (std::size_t c = 0; c < kClients; ++c) {
    servers.push_back(spool::spawn(w19_server(c, std::move(pairs[c].second))));
    clients.push_back(spool::spawn(w19_client(c, std::move(pairs[c].first), bufs)));
  }
  std::size_t total = 0;
  for (auto& h : servers) {
    const std::size_t n = co_await h;
    check(n == kLinesPerClient, "framed_lines: a connection did not carry 20,480 lines");
    total += n;
  }
  for (auto& h : clients) co_await h;
  const auto elapsed = Clock::now() - t0;
  check(total == kTotalLines, "framed_lines: wrong total");
  co_return elapsed;
}

void w19_framed_lines(const Config& cfg) {
  spool::Runtime rt = make_runtime(cfg);
  auto listener = rt.block_on([]() -> spool::Task<spool::net::TcpListener> {
    co_return spool::net::TcpListener::bind("127.0.0.1:0");
  }());
  const WriteBuffers bufs = make_write_buffers();
  auto samples = measure(cfg, [&] { return rt.block_on(w19_round(listener, bufs)); });
  report_ns_per_op("framed_lines", samples, kTotalLines);
}

}  // namespace

std::vector<Workload> framed_lines_workloads() {
  return {{"W19", "framed_lines", w19_framed_lines}};
}

}  // namespace spool_bench
