// The read and write halves of a byte stream (TcpStream, UnixStream): borrowed (split) or
// owned (into_split), so that one task reads while another writes.
#pragma once

#include <sys/socket.h>

#include <memory>
#include <utility>

#include "spool/detail/io_source.hpp"
#include "spool/net/stream_ops.hpp"

namespace spool::net {

template <class S>
class StreamSocket;

/// The read side of `Stream::split()`: borrows the stream, which must outlive it.
template <class Stream>
class BorrowedReadHalf : public AsyncRead<BorrowedReadHalf<Stream>>,
                         public AsyncPeek<BorrowedReadHalf<Stream>> {
 public:
  /// The stream's IoSource.
  detail::IoSource& source() noexcept { return *source_; }
  /// Names the operations in error messages.
  static constexpr const char* kReadWhat = Stream::kReadWhat;
  /// Names the operations in error messages.
  static constexpr const char* kPeekWhat = Stream::kPeekWhat;

 private:
  friend class StreamSocket<Stream>;  // split / into_split make the halves
  explicit BorrowedReadHalf(detail::IoSource& s) noexcept : source_(&s) {}
  detail::IoSource* source_;
};

/// The write side of `Stream::split()`: borrows the stream, which must outlive it.
template <class Stream>
class BorrowedWriteHalf : public AsyncWrite<BorrowedWriteHalf<Stream>> {
 public:
  /// The stream's IoSource.
  detail::IoSource& source() noexcept { return *source_; }
  /// Names the operations in error messages.
  static constexpr const char* kWriteWhat = Stream::kWriteWhat;

 private:
  friend class StreamSocket<Stream>;  // split / into_split make the halves
  explicit BorrowedWriteHalf(detail::IoSource& s) noexcept : source_(&s) {}
  detail::IoSource* source_;
};

/// The read side of `std::move(stream).into_split()`: shares the socket, which closes when
/// both halves are gone.
template <class Stream>
class OwnedReadHalf : public AsyncRead<OwnedReadHalf<Stream>>,
                      public AsyncPeek<OwnedReadHalf<Stream>> {
 public:
  /// The shared IoSource.
  detail::IoSource& source() noexcept { return *source_; }
  /// Names the operations in error messages.
  static constexpr const char* kReadWhat = Stream::kReadWhat;
  /// Names the operations in error messages.
  static constexpr const char* kPeekWhat = Stream::kPeekWhat;

 private:
  friend class StreamSocket<Stream>;  // split / into_split make the halves
  explicit OwnedReadHalf(std::shared_ptr<detail::IoSource> s) noexcept : source_(std::move(s)) {}
  std::shared_ptr<detail::IoSource> source_;
};

/// The write side of `std::move(stream).into_split()`: shares the socket. Destroying it shuts
/// down the writing side (as tokio's OwnedWriteHalf does), so the peer reads the end of the
/// stream.
template <class Stream>
class OwnedWriteHalf : public AsyncWrite<OwnedWriteHalf<Stream>> {
 public:
  /// Moves the half (the moved-from one shuts nothing down).
  OwnedWriteHalf(OwnedWriteHalf&&) noexcept = default;
  OwnedWriteHalf& operator=(OwnedWriteHalf&&) = delete;
  /// Shuts down the writing side (a socket already reset has nothing to tell its peer).
  ~OwnedWriteHalf() {
    if (source_) ::shutdown(source_->fd(), SHUT_WR);
  }
  /// The shared IoSource.
  detail::IoSource& source() noexcept { return *source_; }
  /// Names the operations in error messages.
  static constexpr const char* kWriteWhat = Stream::kWriteWhat;

 private:
  friend class StreamSocket<Stream>;  // split / into_split make the halves
  explicit OwnedWriteHalf(std::shared_ptr<detail::IoSource> s) noexcept : source_(std::move(s)) {}
  std::shared_ptr<detail::IoSource> source_;
};

}  // namespace spool::net
