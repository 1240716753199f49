// The read and write operations every spool byte stream has (TcpStream, its halves,
// UnixStream, the pipe ends): the futures, and the mixins that give a stream its read /
// write members.
#pragma once

#include <sys/uio.h>

#include <concepts>
#include <cstddef>
#include <ranges>
#include <span>
#include <type_traits>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/io_source.hpp"
#include "spool/detail/ring_slot.hpp"

namespace spool::net {

/// A contiguous range of bytes a read may fill: std::array<char, N>, std::vector<std::byte>,
/// std::string, std::span<unsigned char>, a C array...
template <class B>
concept MutableByteBuffer =
    std::ranges::contiguous_range<B> && std::ranges::sized_range<B> &&
        sizeof(std::ranges::range_value_t<B>) == 1 &&
    !std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<B>>>;
/// An array of char (or char8_t), as a string literal is: a write refuses one, since "PING"
/// is five bytes, the last a NUL the write would send. Pass std::string_view("PING"), or
/// std::span(array, n) for the bytes of an array meant to be sent.
template <class B>
concept CharArray = std::is_array_v<std::remove_cvref_t<B>> &&
    (std::same_as<std::ranges::range_value_t<B>, char> ||
     std::same_as<std::ranges::range_value_t<B>, char8_t>);
/// A contiguous range of bytes a write may send (std::string_view too; not a CharArray).
template <class B>
concept ByteBuffer = std::ranges::contiguous_range<B> && std::ranges::sized_range<B> &&
                         sizeof(std::ranges::range_value_t<B>) == 1 &&
                     !CharArray<B>;

/// The future of read / read_exact: ready with the number of bytes read. read gives what
/// one successful recv gives (0 at the end of the stream, or for an empty buffer);
/// read_exact fills the whole buffer, across as many recvs as it takes, and throws
/// UnexpectedEof if the stream ends first. Errors are std::system_error. It may be moved
/// freely; the buffer must outlive it. Dropped pending, it loses no bytes: the next read
/// gets them. On the io_uring backend a socket stream's reads on a worker run one at a
/// time: another read waits for a pending one to complete or be dropped (docs/io.md).
class SPOOL_API ReadFuture {
 public:
  /// What the read waits for.
  enum class Mode {
    kSome,      ///< read: what one recv gives
    kExact,     ///< read_exact: the whole buffer
    kDatagram,  ///< a datagram socket's recv: one datagram (a short one drains nothing)
    kPeek       ///< peek: what one recv would give, left in the socket (MSG_PEEK)
  };
  /// Reads into [data, data + len) from `source` (see TcpStream::read).
  ReadFuture(detail::IoSource& source, std::byte* data, std::size_t len, Mode mode,
             const char* what) noexcept
      : source_(&source), data_(data), len_(len), mode_(mode), what_(what) {}
  /// Ready with the count once read (see the class comment).
  Poll<std::size_t> poll(Context& cx);

 private:
  // read_exact after a read of `n` bytes: ready when the buffer is full; throws
  // UnexpectedEof at the end of the stream.
  Poll<std::size_t> read_exact_step(std::size_t n);
  // The read on the worker's io_uring (io_uring sockets only): true with `out` set, false
  // for the readiness path. Out of line, so that epoll's poll stays as small as before.
  [[gnu::noinline]] bool poll_ring(Context& cx, Poll<std::size_t>& out);

  detail::IoSource* source_;
  std::byte* data_;
  std::size_t len_;
  std::size_t done_ = 0;
  Mode mode_;
  const char* what_;
  detail::IoWaiter waiter_;
  detail::RingSlot ring_;  // a socket's receive on the worker's io_uring, while it waits
};

/// The future of write / write_all: ready with the number of bytes written. write gives
/// what one successful send accepts; write_all sends the whole buffer. A write to a socket
/// whose peer is gone throws std::system_error (EPIPE or ECONNRESET), never SIGPIPE. It
/// may be moved freely; the buffer must outlive it. Dropped pending, it may have sent part
/// of the buffer. On the io_uring backend a socket stream's writes on a worker run one at a
/// time: another write waits for a pending one to complete or be dropped (docs/io.md).
class SPOOL_API WriteFuture {
 public:
  /// Writes [data, data + len) to `source` (see TcpStream::write).
  WriteFuture(detail::IoSource& source, const std::byte* data, std::size_t len, bool all,
              const char* what) noexcept
      : source_(&source), data_(data), len_(len), all_(all), what_(what) {}
  /// Ready with the count once written (see the class comment).
  Poll<std::size_t> poll(Context& cx);

 private:
  // The write on the worker's io_uring, as ReadFuture::poll_ring.
  [[gnu::noinline]] bool poll_ring(Context& cx, Poll<std::size_t>& out);

  detail::IoSource* source_;
  const std::byte* data_;
  std::size_t len_;
  std::size_t done_ = 0;
  bool all_;
  const char* what_;
  detail::IoWaiter waiter_;
  detail::RingSlot ring_;  // a socket's send on the worker's io_uring, while it waits
};

/// The future of write_vectored: one sendmsg of up to IOV_MAX buffers, in order; ready with
/// the number of bytes it accepted (possibly fewer than the total). The buffers must outlive
/// it.
class SPOOL_API WriteVectoredFuture {
 public:
  /// Writes the buffers of `bufs` to `source`.
  WriteVectoredFuture(detail::IoSource& source, std::span<const iovec> bufs,
                      const char* what) noexcept
      : source_(&source), bufs_(bufs), what_(what) {}
  /// Ready with the count once written.
  Poll<std::size_t> poll(Context& cx);

 private:
  detail::IoSource* source_;
  std::span<const iovec> bufs_;
  const char* what_;
  detail::IoWaiter waiter_;
};

/// Makes an iovec of a byte buffer, for write_vectored.
template <ByteBuffer B>
iovec io_buffer(const B& buf) noexcept {
  return iovec{const_cast<void*>(static_cast<const void*>(std::ranges::data(buf))),
               std::ranges::size(buf)};
}

/// The read members of a stream (or of its read half); `S::source()` gives the IoSource.
template <class S>
class AsyncRead {
 public:
  /// Reads what is available into `buf` (waiting until something is): the count, 0 at the
  /// end of the stream.
  template <MutableByteBuffer B>
  ReadFuture read(B&& buf) {
    return {src(), bytes(buf), std::ranges::size(buf), ReadFuture::Mode::kSome, S::kReadWhat};
  }
  /// Fills `buf` entirely; throws UnexpectedEof if the stream ends first.
  template <MutableByteBuffer B>
  ReadFuture read_exact(B&& buf) {
    return {src(), bytes(buf), std::ranges::size(buf), ReadFuture::Mode::kExact, S::kReadWhat};
  }

 private:
  detail::IoSource& src() { return static_cast<S*>(this)->source(); }
  template <class B>
  static std::byte* bytes(B& buf) {
    return reinterpret_cast<std::byte*>(std::ranges::data(buf));
  }
};

/// The peek member of a socket stream (or of its read half; a pipe has none, MSG_PEEK being
/// a socket's); `S::source()` gives the IoSource, `S::kPeekWhat` names it in errors.
template <class S>
class AsyncPeek {
 public:
  /// Copies what is available into `buf` (waiting until something is) without taking it
  /// from the stream: the next read gives the same bytes. The count, 0 at the end of the
  /// stream. A second peek returns at once with the same bytes (it does not wait for more,
  /// as in tokio): to wait for more, read.
  template <MutableByteBuffer B>
  ReadFuture peek(B&& buf) {
    return {static_cast<S*>(this)->source(), reinterpret_cast<std::byte*>(std::ranges::data(buf)),
            std::ranges::size(buf), ReadFuture::Mode::kPeek, S::kPeekWhat};
  }
};

/// The write members of a stream (or of its write half); `S::source()` gives the IoSource.
template <class S>
class AsyncWrite {
 public:
  /// Writes some of `buf` (waiting until the socket accepts any): the count.
  template <ByteBuffer B>
  WriteFuture write(const B& buf) {
    return {src(), bytes(buf), std::ranges::size(buf), false, S::kWriteWhat};
  }
  /// Writes all of `buf`.
  template <ByteBuffer B>
  WriteFuture write_all(const B& buf) {
    return {src(), bytes(buf), std::ranges::size(buf), true, S::kWriteWhat};
  }
  /// Writes from several buffers in one syscall (make them with io_buffer): the count,
  /// which may end inside any of them.
  WriteVectoredFuture write_vectored(std::span<const iovec> bufs) {
    return {src(), bufs, S::kWriteWhat};
  }

 private:
  detail::IoSource& src() { return static_cast<S*>(this)->source(); }
  template <class B>
  static const std::byte* bytes(const B& buf) {
    return reinterpret_cast<const std::byte*>(std::ranges::data(buf));
  }
};

}  // namespace spool::net
