// spool::IoBackend: which kernel interface a runtime's I/O driver waits on (Builder::io_backend).
#pragma once

#include "spool/config.hpp"

namespace spool {

/// The kernel interface of a runtime's I/O driver. Both serve the same sockets with the same
/// API; docs/io.md compares them.
enum class IoBackend {
  kEpoll,    ///< epoll, edge-triggered (any Linux)
  kIoUring,  ///< io_uring (Linux 5.13 or later, spool built with liburing)
  kAuto,     ///< io_uring where the kernel allows it, else epoll
};

/// "epoll", "io_uring" or "auto".
constexpr const char* to_string(IoBackend b) noexcept {
  switch (b) {
    case IoBackend::kEpoll:
      return "epoll";
    case IoBackend::kIoUring:
      return "io_uring";
    case IoBackend::kAuto:
      break;
  }
  return "auto";
}

}  // namespace spool
