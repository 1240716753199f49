// spool::io::Duplex: one byte stream made of a reader and a writer (two pipe ends), for
// what needs a single stream that reads and writes (TLS over pipes).
#pragma once

#include <sys/socket.h>

#include <utility>

#include "spool/net/stream_ops.hpp"

namespace spool::io {

/// Reads from `R` (a PipeReader...) and writes to `W` (a PipeWriter...), as one stream with
/// their read, read_exact, write and write_all. Each side keeps its own thread-safety: one
/// task may read while another writes.
template <class R, class W>
class Duplex {
 public:
  /// Joins `reader` and `writer`.
  Duplex(R reader, W writer) : reader_(std::move(reader)), writer_(std::move(writer)) {}

  /// The reader's read.
  template <net::MutableByteBuffer B>
  auto read(B&& buf) {
    return reader_.read(std::forward<B>(buf));
  }
  /// The reader's read_exact.
  template <net::MutableByteBuffer B>
  auto read_exact(B&& buf) {
    return reader_.read_exact(std::forward<B>(buf));
  }
  /// The writer's write.
  template <net::ByteBuffer B>
  auto write(const B& buf) {
    return writer_.write(buf);
  }
  /// The writer's write_all.
  template <net::ByteBuffer B>
  auto write_all(const B& buf) {
    return writer_.write_all(buf);
  }
  /// As a socket's shutdown: SHUT_WR closes the writer (the peer reads the end of the
  /// stream), SHUT_RD the reader, SHUT_RDWR both.
  void shutdown(int how = SHUT_WR) {
    if (how != SHUT_RD) writer_.close();
    if (how != SHUT_WR) reader_.close();
  }
  /// The reader.
  R& reader() noexcept { return reader_; }
  /// The writer.
  W& writer() noexcept { return writer_; }

 private:
  R reader_;
  W writer_;
};

}  // namespace spool::io
