// Helpers of the networking tests: an echo server task, byte patterns, a closed port, a
// read that must find its connection reset.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "spool/spool.hpp"

namespace spool_net_test {

/// Reads from `s`, whose peer has reset the connection: the read must fail with
/// ECONNRESET. Gives the error's message, for the caller to check what it names ("" when
/// the read did not fail so, which is a test failure already).
template <class Stream>
spool::Task<std::string> read_expecting_reset(Stream& s) {
  std::array<char, 16> buf{};
  try {
    (void)co_await s.read(buf);
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::connection_reset) << e.what();
    co_return e.what();
  }
  ADD_FAILURE() << "the read after a reset returned";
  co_return "";
}

/// Polls `op` once from the calling task: true if that poll threw std::logic_error with
/// `says` in its message (a misuse refused).
template <class Op>
spool::Task<bool> one_poll_refused(Op& op, std::string says) {
  bool refused = false;
  co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
    try {
      (void)op.poll(cx);
    } catch (const std::logic_error& e) {
      refused = std::string(e.what()).find(says) != std::string::npos;
    }
    return true;
  });
  co_return refused;
}

/// Polls `op` once from the calling task: its value if that poll was ready, else nullopt
/// (the op is then dropped pending).
template <class Op>
spool::Task<std::optional<std::size_t>> first_poll(Op op) {
  std::optional<std::size_t> got;
  co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
    if (spool::Poll<std::size_t> p = op.poll(cx); p.is_ready()) got = p.value();
    return true;
  });
  co_return got;
}

/// Reads, read_exacts and peeks an empty buffer of `s`, which has nothing queued: each must
/// be ready with 0 at its first poll (a stream socket's recv of 0 bytes says EAGAIN then).
template <class Stream>
spool::Task<void> empty_reads_give_zero_at_once(Stream& s) {
  std::array<char, 1> storage{};
  const std::span<char> empty(storage.data(), 0);
  EXPECT_EQ(co_await first_poll(s.read(empty)), std::optional<std::size_t>(0));
  EXPECT_EQ(co_await first_poll(s.read_exact(empty)), std::optional<std::size_t>(0));
  EXPECT_EQ(co_await first_poll(s.peek(empty)), std::optional<std::size_t>(0));
}

/// Echoes everything `s` reads back to it until the peer ends its side.
inline spool::Task<void> echo(spool::net::TcpStream s) {
  std::array<char, 4096> buf{};
  for (;;) {
    const std::size_t n = co_await s.read(buf);
    if (n == 0) co_return;
    co_await s.write_all(std::span(buf.data(), n));
  }
}

/// Accepts `n` connections on `l` and echoes each in its own task.
inline spool::Task<void> serve_echo(spool::net::TcpListener& l, int n) {
  for (int i = 0; i < n; ++i) {
    auto [stream, peer] = co_await l.accept();
    (void)spool::spawn(echo(std::move(stream)));  // detached: it ends with its connection
  }
}

/// `n` bytes of a pattern that no shift of itself matches (a misplaced chunk is caught).
inline std::vector<std::uint8_t> pattern(std::size_t n, std::uint32_t seed = 1) {
  std::vector<std::uint8_t> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<std::uint8_t>(x);
  }
  return v;
}

/// A 127.0.0.1 address nothing is bound to (for sockets of `type`, SOCK_STREAM or
/// SOCK_DGRAM): the port of a plain socket, closed again. Plain, not spool's: on io_uring a
/// spool socket closed on a thread other than the one that watches it is released an
/// instant after its close returns (docs/io.md), and these tests need the port free at once.
inline spool::net::SocketAddr closed_port(int type) {
  const int fd = ::socket(AF_INET, type, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error("closed_port: cannot bind a socket on 127.0.0.1");
  return spool::net::SocketAddr(reinterpret_cast<const sockaddr*>(&a), len);
}

/// A connected pair of TCP streams on the loopback.
inline spool::Task<std::pair<spool::net::TcpStream, spool::net::TcpStream>> tcp_pair() {
  auto listener = spool::net::TcpListener::bind("127.0.0.1:0");
  spool::net::TcpStream client = co_await spool::net::TcpStream::connect(listener.local_addr());
  auto [server, peer] = co_await listener.accept();
  co_return std::pair{std::move(client), std::move(server)};
}

}  // namespace spool_net_test
