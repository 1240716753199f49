// spool::pipe(): an anonymous pipe whose two ends are async streams (PipeReader, PipeWriter).
#pragma once

#include <utility>

#include "spool/detail/io_source.hpp"
#include "spool/net/stream_ops.hpp"

namespace spool {

namespace process {
class Command;  // registers its children's pipe ends itself (spool/process/command.hpp)
}  // namespace process

class PipeWriter;

/// The read end of a pipe (or FIFO): read and read_exact as on a TcpStream (stream_ops.hpp),
/// so BufReader and net::copy take it too. Reading gives 0 once every write end is closed
/// and the pipe is empty. Closed when destroyed. Errors are std::system_error naming the
/// operation.
class SPOOL_API PipeReader : public net::AsyncRead<PipeReader> {
 public:
  /// Takes `fd`, the read end of a pipe or a FIFO opened for reading, made elsewhere: it is
  /// made non-blocking and close-on-exec (which other holders of the same open pipe see
  /// too) and registered with the current runtime's driver. Throws std::invalid_argument,
  /// saying what `fd` is, when it is no pipe or not open for reading; `fd` is closed then
  /// (unless it was not open).
  static PipeReader from_fd(int fd);
  /// The descriptor (-1 once moved from).
  int fd() const noexcept { return source_.fd(); }
  /// Closes the read end now (a writer's next write fails with EPIPE). A read of another
  /// task still waiting on it is woken, and fails with std::logic_error.
  void close() noexcept { source_.close(); }
  /// The pipe end and its registration (for the read operations).
  detail::IoSource& source() noexcept { return source_; }
  /// Names the operations in error messages.
  static constexpr const char* kReadWhat = "spool::PipeReader::read";

 private:
  friend std::pair<PipeReader, PipeWriter> pipe();
  friend class process::Command;
  explicit PipeReader(detail::IoSource source) noexcept : source_(std::move(source)) {}
  detail::IoSource source_;
};

/// The write end of a pipe (or FIFO): write, write_all and write_vectored as on a TcpStream.
/// A write after every read end closed throws std::system_error EPIPE; it never raises
/// SIGPIPE (spool's threads keep it blocked, another thread blocks it for the write's
/// duration: docs/io.md). Closing it (its destruction, or close()) is the readers' end of
/// the stream.
class SPOOL_API PipeWriter : public net::AsyncWrite<PipeWriter> {
 public:
  /// Takes `fd`, the write end of a pipe or a FIFO opened for writing (see
  /// PipeReader::from_fd).
  static PipeWriter from_fd(int fd);
  /// The descriptor (-1 once moved from).
  int fd() const noexcept { return source_.fd(); }
  /// Closes the write end now: the reader reads the end of the stream after what was written.
  /// A write of another task still waiting on it is woken, and fails with std::logic_error.
  void close() noexcept { source_.close(); }
  /// The pipe end and its registration (for the write operations).
  detail::IoSource& source() noexcept { return source_; }
  /// Names the operations in error messages.
  static constexpr const char* kWriteWhat = "spool::PipeWriter::write";

 private:
  friend std::pair<PipeReader, PipeWriter> pipe();
  friend class process::Command;
  explicit PipeWriter(detail::IoSource source) noexcept : source_(std::move(source)) {}
  detail::IoSource source_;
};

/// A new pipe (pipe2, non-blocking and close-on-exec), both ends registered with the current
/// runtime's driver (the process-wide one outside every runtime). Bytes written to the
/// writer come out of the reader in order; the kernel buffers 64 KiB by default, and a write
/// waits (pending) while the buffer is full. Throws std::system_error when the process is
/// out of descriptors.
SPOOL_API std::pair<PipeReader, PipeWriter> pipe();

}  // namespace spool
