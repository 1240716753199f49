// spool::net::copy and copy_bidirectional: move a stream's bytes into another until it ends
// (tokio::io::copy and copy_bidirectional), e.g. for a proxy.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "spool/combinators/when_all.hpp"
#include "spool/core/task.hpp"

namespace spool::net {

/// The size of the buffer copy uses unless told otherwise (tokio's is 8 KiB too).
inline constexpr std::size_t kCopyBufferSize = 8 * 1024;

/// Reads `reader` (a stream or its read half: anything with read(buffer)) until the end of
/// its stream and writes every byte to `writer` (anything with write_all(span of const
/// char): a stream, a write half, a BufWriter), through a buffer of `buffer_size` bytes. A
/// writer that has flush() is flushed after each chunk, so that nothing read waits in its
/// buffer while the next read waits (a request through a BufWriter must reach the peer
/// before its reply can come). The number of bytes copied. Errors of either side propagate
/// (std::system_error); the bytes copied before are then lost to the caller. Both must outlive the
/// Task.
template <class Reader, class Writer>
Task<std::uint64_t> copy(Reader& reader, Writer& writer,
                         std::size_t buffer_size = kCopyBufferSize) {
  std::vector<char> buffer(buffer_size == 0 ? 1 : buffer_size);
  std::uint64_t copied = 0;
  for (;;) {
    const std::size_t n = co_await reader.read(buffer);
    if (n == 0) break;
    co_await writer.write_all(std::span<const char>(buffer.data(), n));
    if constexpr (requires { writer.flush(); }) co_await writer.flush();
    copied += n;
  }
  co_return copied;
}

/// Copies `a`'s bytes to `b` and `b`'s to `a` at once, each way until its reader's stream
/// ends, then shuts down the writing side of the other stream (SHUT_WR: its peer reads the
/// end; a peer already gone is skipped). Ready with (bytes from a to b, bytes from b to a)
/// once both ways ended. `a` and `b` are connected streams (TcpStream, UnixStream, in any
/// pairing) and must outlive the Task. An error in either way (a reset) cancels the other
/// and propagates, as in tokio.
template <class A, class B>
Task<std::pair<std::uint64_t, std::uint64_t>> copy_bidirectional(A& a, B& b) {
  auto [a_read, a_write] = a.split();
  auto [b_read, b_write] = b.split();
  // One way: `from` into `to_half`, then the end of the stream to `to`'s peer.
  auto one_way = [](auto& from, auto& to_half, auto& to) -> Task<std::uint64_t> {
    const std::uint64_t n = co_await copy(from, to_half);
    try {
      to.shutdown(SHUT_WR);
    } catch (const std::system_error& e) {
      // A peer already gone (ENOTCONN after a reset) has nothing to be told; the other way
      // may still be delivering what it sent before.
      if (e.code().value() != ENOTCONN) throw;
    }
    co_return n;
  };
  auto [a_to_b, b_to_a] =
      co_await when_all(one_way(a_read, b_write, b), one_way(b_read, a_write, a));
  co_return std::pair{a_to_b, b_to_a};
}

}  // namespace spool::net
