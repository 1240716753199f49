// Helpers of the networking tests: an echo server task, byte patterns.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spool/spool.hpp"

namespace spool_net_test {

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

}  // namespace spool_net_test
