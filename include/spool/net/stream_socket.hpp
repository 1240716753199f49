// spool::net::StreamSocket: what a connected stream socket of any family shares (TcpStream,
// UnixStream): the read and write operations, the halves, the socket.
#pragma once

#include <memory>
#include <utility>

#include "spool/detail/io_source.hpp"
#include "spool/net/halves.hpp"
#include "spool/net/stream_ops.hpp"

namespace spool::net {

/// The base of a connected stream socket `S` (CRTP): its reads and writes are futures
/// (stream_ops.hpp, naming themselves with `S::kReadWhat`, `S::kPeekWhat` and
/// `S::kWriteWhat`), and split /
/// into_split give one task the reading half and another the writing half.
template <class S>
class StreamSocket : public AsyncRead<S>, public AsyncPeek<S>, public AsyncWrite<S> {
 public:
  /// The borrowed read half (split).
  using ReadHalf = BorrowedReadHalf<S>;
  /// The borrowed write half (split).
  using WriteHalf = BorrowedWriteHalf<S>;
  /// The owned read half (into_split).
  using OwnedReadHalf = net::OwnedReadHalf<S>;
  /// The owned write half (into_split).
  using OwnedWriteHalf = net::OwnedWriteHalf<S>;

  /// Borrowed halves, for two tasks that both live no longer than the stream (a join).
  std::pair<ReadHalf, WriteHalf> split() noexcept {
    return {ReadHalf(source_), WriteHalf(source_)};
  }
  /// Owned halves, for two independent tasks: the socket closes when both are gone, and
  /// destroying the write half shuts down the writing side (the peer sees the end).
  std::pair<OwnedReadHalf, OwnedWriteHalf> into_split() && {
    auto shared = std::make_shared<detail::IoSource>(std::move(source_));
    return {OwnedReadHalf(shared), OwnedWriteHalf(shared)};
  }

  /// The socket and its registration (for the stream operations).
  detail::IoSource& source() noexcept { return source_; }

 protected:
  /// Takes the connected socket `source`.
  explicit StreamSocket(detail::IoSource source) noexcept : source_(std::move(source)) {}

  /// The socket (closed when the stream, or both owned halves, are destroyed).
  detail::IoSource source_;
};

}  // namespace spool::net
