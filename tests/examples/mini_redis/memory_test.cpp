// mini-redis's memory against hostile clients (issue 28), measured on the server's own
// process: 250 connections that each send a large command and then only PINGs do not pin
// its size; 250 that send large commands at once stay within --max-query-total; a large
// PUBLISH to 249 subscribers is held once, not once per subscriber. And a SIGTERM with the
// 250 connections open ends it with status 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "server_process.hpp"
#include "spool/spool.hpp"
#include "support/rt_sanitizer.hpp"

namespace {

using mini_redis_test::ServerProcess;
using spool::net::TcpStream;

constexpr int kConnections = 250;          // mini-redis's --max-connections default
constexpr std::size_t kLarge = 1 << 20;    // one hostile command's argument
constexpr std::size_t kMessage = 4 << 20;  // the large PUBLISH
constexpr long kBudgetKib = 32 * 1024;     // --max-query-total in this test
// What the server may hold beyond its resident size with 250 idle connections. Without the
// fixes: 4 MiB kept per connection once the large commands are done (1 GiB), every
// connection's large command buffered at once (1 GiB), 249 copies of the message (1 GiB).
constexpr long kIdleGrowthKib = 64 * 1024;
// Under TSan the resident size also counts the shadow of every heap byte touched, about four
// bytes each: with the heap at a 43-45 MB peak, epoll's resident peak grows 171-187 MB,
// against this bound's 192 MiB (io_uring's 199-205 MB, heap 47-49 MB). Twice the bound
// there still fails each bug above (4 GiB under TSan), and the io_uring path's former
// 64 KiB buffers (+600 MB, issue 30).
constexpr long kPeakGrowthKib = (spool_rt_test::kUnderTsan ? 2 : 1) * (4 * kBudgetKib + 64 * 1024);

std::string bulk_command(std::string_view name, const std::string& key, std::size_t size) {
  std::string c = "*" + std::string(key.empty() ? "2" : "3") + "\r\n$" +
                  std::to_string(name.size()) + "\r\n" + std::string(name) + "\r\n";
  if (!key.empty()) c += "$" + std::to_string(key.size()) + "\r\n" + key + "\r\n";
  c += "$" + std::to_string(size) + "\r\n" + std::string(size, 'x') + "\r\n";
  return c;
}

std::string bulk_reply(std::size_t size) {
  return "$" + std::to_string(size) + "\r\n" + std::string(size, 'x') + "\r\n";
}

// Reads `expected.size()` bytes, a chunk at a time (the test's clients must not hold large
// replies at once either): true when they are `expected`. `first`: bytes already read.
spool::Task<bool> read_matching(TcpStream& s, std::string_view expected, std::string_view first) {
  if (expected.substr(0, first.size()) != first) co_return false;
  std::size_t matched = first.size();
  std::vector<char> buf(1 << 16);
  while (matched < expected.size()) {
    const std::size_t want = std::min(buf.size(), expected.size() - matched);
    co_await s.read_exact(std::span(buf.data(), want));
    if (expected.substr(matched, want) != std::string_view(buf.data(), want)) co_return false;
    matched += want;
  }
  co_return true;
}

// Sends `request`, then reads `reply`.
spool::Task<void> expect_reply(TcpStream& s, const std::string& request, const std::string& reply) {
  co_await s.write_all(request);
  EXPECT_TRUE(co_await read_matching(s, reply, {})) << "a reply of " << reply.size() << " bytes";
}

spool::Task<void> ping(TcpStream& s) { co_await expect_reply(s, "PING\r\n", "+PONG\r\n"); }

// An ECHO of kLarge bytes on every connection at once: each sends all of it but its last
// byte, so that no command can end and free its buffer until all have sent that much; then
// the last byte. Answered, or refused because the connections' buffers reached
// --max-query-total (the error, or a reset when the server closed before it read all of it):
// a new connection then takes its place.
spool::Task<void> echo_at_once(std::unique_ptr<TcpStream>& s, spool::net::SocketAddr server,
                               spool::Barrier& all_sent, const std::string& request,
                               const std::string& reply) {
  const std::string_view bytes = request;
  bool reset = false;
  try {
    co_await s->write_all(bytes.substr(0, bytes.size() - 1));
  } catch (const std::system_error&) {
    reset = true;
  }
  co_await all_sent.wait();
  std::string refusal;
  try {
    if (!reset) co_await s->write_all(bytes.substr(bytes.size() - 1));
    char first = 0;
    if (!reset) co_await s->read_exact(std::span(&first, 1));
    if (first == '$') {
      EXPECT_TRUE(co_await read_matching(*s, reply, std::string_view(&first, 1)));
      co_return;
    }
    refusal = first;
    char buf[256];
    for (;;) {
      const std::size_t n = co_await s->read(buf);
      if (n == 0) break;
      refusal.append(buf, n);
    }
  } catch (const std::system_error&) {
    reset = true;
  }
  if (!reset) {
    EXPECT_EQ(refusal,
              "-ERR query buffers of all connections at their limit (--max-query-total)\r\n");
  }
  auto replacement = co_await TcpStream::connect(server);
  s = std::make_unique<TcpStream>(std::move(replacement));
  co_await ping(*s);
}

// A subscriber reads the one message published to it.
spool::Task<void> read_message(TcpStream& s, const std::string& message) {
  EXPECT_TRUE(co_await read_matching(s, message, {})) << "the message differs";
}

TEST(MiniRedisMemory, HostileConnectionsStayWithinTheBounds) {
  ServerProcess server({"--workers", "2", "--max-query-total", std::to_string(kBudgetKib * 1024)});
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  rt.block_on([](ServerProcess& server) -> spool::Task<void> {
    std::vector<std::unique_ptr<TcpStream>> clients;
    for (int i = 0; i < kConnections; ++i) {
      clients.push_back(std::make_unique<TcpStream>(co_await TcpStream::connect(server.address())));
      co_await ping(*clients.back());
    }
    const long base = server.resident_kib();

    // One large command each, one connection at a time, then only PINGs.
    const std::string echo = bulk_command("ECHO", "", kLarge);
    const std::string echoed = bulk_reply(kLarge);
    for (auto& c : clients) co_await expect_reply(*c, echo, echoed);
    for (auto& c : clients) co_await ping(*c);
    EXPECT_LT(server.resident_kib() - base, kIdleGrowthKib)
        << "idle connections hold what their large commands took";

    // A large command on every connection at once.
    std::vector<spool::JoinHandle<void>> all;
    spool::Barrier all_sent(kConnections);
    for (auto& c : clients) {
      all.push_back(spool::spawn(echo_at_once(c, server.address(), all_sent, echo, echoed)));
    }
    for (auto& h : all) co_await h;

    // A large PUBLISH to every other connection.
    const std::string subscribed = "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n";
    for (int i = 1; i < kConnections; ++i) {
      co_await expect_reply(*clients[i], "SUBSCRIBE news\r\n", subscribed);
    }
    const std::string message = "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n" + bulk_reply(kMessage);
    std::vector<spool::JoinHandle<void>> readers;
    for (int i = 1; i < kConnections; ++i) {
      readers.push_back(spool::spawn(read_message(*clients[i], message)));
    }
    co_await expect_reply(*clients[0], bulk_command("PUBLISH", "news", kMessage),
                          ":" + std::to_string(kConnections - 1) + "\r\n");
    for (auto& h : readers) co_await h;
    EXPECT_LT(server.peak_kib() - base, kPeakGrowthKib)
        << "large commands sent at once, or a large message, took more than their bound";
    EXPECT_EQ(server.terminate(), 0) << "a SIGTERM with every connection open";
  }(server));
}

}  // namespace
