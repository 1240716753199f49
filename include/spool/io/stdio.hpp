// spool::io::stdin(), stdout(), stderr(): the process's standard streams as async streams.
// (In namespace spool::io, as tokio's: <cstdio>'s stdin / stdout / stderr are global names,
// and functions of the same names in namespace spool would hide them from spool's own code
// and make them ambiguous after a `using namespace spool`. Call these qualified.)
#pragma once

#include <cstddef>
#include <memory>
#include <ranges>
#include <span>

#include "spool/core/task.hpp"
#include "spool/detail/io_source.hpp"
#include "spool/net/stream_ops.hpp"

namespace spool::detail {

/// One of the process's descriptors 0, 1, 2 as an async stream. Where the descriptor is a
/// pipe, a FIFO or a terminal (or another pollable character device), it is opened again
/// through /proc/self/fd: a new open file of the same pipe or terminal, made non-blocking
/// and registered with the I/O driver, so descriptor 0, 1 or 2 itself stays as it was (its
/// O_NONBLOCK flag is shared with the parent shell and the other processes that hold it).
/// Anything else — a regular file, a socket, /dev/null, a closed pipe's FIFO — is read and
/// written with blocking calls on the blocking pool (a thread of its own outside every
/// runtime), as tokio does for all three; where another process left the descriptor
/// non-blocking, such a call waits in poll after an EAGAIN and tries again.
class SPOOL_API StdioStream {
 public:
  /// Opens descriptor `fd` for reading (`write` false) or writing; `what` names it in errors.
  /// Throws std::system_error when `fd` is not open. Copies share the opened stream.
  StdioStream(int fd, bool write, const char* what);
  /// True when operations wait on the I/O driver, false when they run on the blocking pool.
  bool polled() const noexcept { return static_cast<bool>(state_->source); }
  /// What one read gives (0 at the end), or all of `buf` (`exact`: UnexpectedEof if it
  /// ends first). The Task shares the stream: it may outlive this object.
  Task<std::size_t> read(std::span<std::byte> buf, bool exact) const {
    return read_on(state_, buf, exact);
  }
  /// Writes some of `buf`, or all of it (`all`). The Task shares the stream, as read's.
  Task<std::size_t> write(std::span<const std::byte> buf, bool all) const {
    return write_on(state_, buf, all);
  }

 private:
  struct State {
    IoSource source;   // polled: the reopened descriptor
    int fd;            // 0, 1 or 2
    const char* what;  // names the operation in errors
  };
  // The Tasks' bodies: `s` is a parameter (kept in the coroutine frame), not `this`.
  static Task<std::size_t> read_on(std::shared_ptr<State> s, std::span<std::byte> buf, bool exact);
  static Task<std::size_t> write_on(std::shared_ptr<State> s, std::span<const std::byte> buf,
                                    bool all);
  std::shared_ptr<State> state_;
};

}  // namespace spool::detail

namespace spool::io {

/// The process's standard input (descriptor 0) as an async stream; make it with
/// spool::io::stdin(). One task reads at a time. Cheap to copy (copies share the stream),
/// and the Tasks of read and read_exact share it too: they may outlive the Stdin that made
/// them (`co_await spool::io::stdin().read(buf)` is fine). Where stdin is not pollable (a regular
/// file, a socket) each read runs on the blocking pool: a read dropped before it ends still runs to
/// its end there, and the bytes it gets are lost; and a runtime's shutdown waits for a read that
/// blocks (a socket with nothing to read), so bound it with Runtime::shutdown_timeout. See
/// docs/process.md, "Stdio".
class Stdin {
 public:
  /// Reads what is available into `buf` (waiting until something is): the count, 0 at the
  /// end of the input. `buf` must outlive the Task.
  template <net::MutableByteBuffer B>
  Task<std::size_t> read(B&& buf) {
    return stream_.read(bytes(buf), false);
  }
  /// Fills `buf` entirely; throws net::UnexpectedEof if the input ends first.
  template <net::MutableByteBuffer B>
  Task<std::size_t> read_exact(B&& buf) {
    return stream_.read(bytes(buf), true);
  }
  /// True when reads wait on the I/O driver (a pipe, a FIFO, a terminal), false when they
  /// run on the blocking pool.
  bool polled() const noexcept { return stream_.polled(); }

 private:
  friend Stdin stdin();
  Stdin() : stream_(0, false, "spool::io::Stdin::read") {}
  template <class B>
  static std::span<std::byte> bytes(B& buf) {
    return {reinterpret_cast<std::byte*>(std::ranges::data(buf)), std::ranges::size(buf)};
  }
  spool::detail::StdioStream stream_;
};

/// The process's standard output (descriptor 1) or error (2) as an async stream; make it
/// with spool::io::stdout() or stderr(). Nothing is buffered: each write is one or more
/// write syscalls, so bytes written here and through `<cstdio>` or std::cout (which buffer)
/// may come out in another order than they were written. A write to a pipe whose reader
/// is gone throws std::system_error EPIPE, never SIGPIPE. Where the descriptor is not
/// pollable (a regular file, a socket), each write copies its bytes and runs on the
/// blocking pool: a write dropped before it ends still writes them. Cheap to copy; its
/// Tasks may outlive it, as Stdin's.
class StdWriter {
 public:
  /// Writes some of `buf` (waiting until the descriptor accepts any): the count.
  template <net::ByteBuffer B>
  Task<std::size_t> write(const B& buf) {
    return stream_.write(bytes(buf), false);
  }
  /// Writes all of `buf`.
  template <net::ByteBuffer B>
  Task<std::size_t> write_all(const B& buf) {
    return stream_.write(bytes(buf), true);
  }
  /// True when writes wait on the I/O driver, false when they run on the blocking pool.
  bool polled() const noexcept { return stream_.polled(); }

 private:
  friend StdWriter stdout();
  friend StdWriter stderr();
  StdWriter(int fd, const char* what) : stream_(fd, true, what) {}
  template <class B>
  static std::span<const std::byte> bytes(const B& buf) {
    return {reinterpret_cast<const std::byte*>(std::ranges::data(buf)), std::ranges::size(buf)};
  }
  spool::detail::StdioStream stream_;
};

/// The standard input. Each call opens it anew (see spool::detail::StdioStream); throws
/// std::system_error when descriptor 0 is not open.
SPOOL_API Stdin stdin();
/// The standard output (descriptor 1); see stdin().
SPOOL_API StdWriter stdout();
/// The standard error (descriptor 2); see stdin().
SPOOL_API StdWriter stderr();

}  // namespace spool::io
