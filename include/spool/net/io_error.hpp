// spool::net::UnexpectedEof: the error of read_exact when the stream ends first.
#pragma once

#include <string>
#include <system_error>

#include "spool/config.hpp"

namespace spool::net {

/// Thrown by read_exact when the peer closed its side before the buffer was full. A
/// std::system_error like every spool socket error, with the code std::errc::io_error.
class SPOOL_API UnexpectedEof : public std::system_error {
 public:
  /// `what` names the operation (and, from a stream's read_exact, the socket's addresses;
  /// BufReader's, which wraps any reader, knows none).
  explicit UnexpectedEof(const std::string& what)
      : std::system_error(std::make_error_code(std::errc::io_error), what) {}
};

}  // namespace spool::net
