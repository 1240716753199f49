// The errors the Asio bridge adds to Asio's own: a stopped io_context, an abandoned operation.
#pragma once

// First: it refuses -fno-exceptions builds before Boost is looked for.
#include "spool/config.hpp"

#include <stdexcept>

namespace spool::asio {

/// Thrown by a use_task future whose io_context was stopped (io_context::stop()) while the
/// task waited, or before the operation began: its completion would come only after a
/// restart, so the task is told at once. Seen where spool runs the io_context (drive, run)
/// and at every operation started on a stopped one.
class SPOOL_API IoContextStopped : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Thrown by a use_task future whose completion handler Asio destroyed without calling it
/// (the io_context was destroyed, or shut down, with the operation pending); and the error
/// async_await's handler gets when the spool runtime shut down before the future was ready,
/// or was shut down already (the future was dropped).
class SPOOL_API OperationAbandoned : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace spool::asio
