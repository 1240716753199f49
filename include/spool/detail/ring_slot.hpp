// RingSlot: the entry a socket stream's read or write future has on a worker's io_uring.
#pragma once

#include <utility>

#include "spool/config.hpp"

namespace spool::detail {

class StreamOp;

/// The operation a read or write future of a socket stream has handed to its worker's
/// io_uring (src/net/ring_stream.hpp), held while the future waits for it. The operation
/// holds the socket's buffer of its direction (never the future's), so the future may be
/// dropped at any time: a dropped send is cancelled, and a dropped receive's bytes go to the
/// socket's next read (nothing is lost). Moving the future moves the operation with it.
class RingSlot {
 public:
  /// Nothing in flight.
  RingSlot() = default;
  /// Takes `other`'s operation.
  RingSlot(RingSlot&& other) noexcept : op_(std::exchange(other.op_, nullptr)) {}
  /// Gives up this slot's operation, then takes `other`'s.
  RingSlot& operator=(RingSlot&& other) noexcept {
    if (this != &other) {
      if (op_ != nullptr) drop();
      op_ = std::exchange(other.op_, nullptr);
    }
    return *this;
  }
  RingSlot(const RingSlot&) = delete;
  RingSlot& operator=(const RingSlot&) = delete;
  /// Gives up the operation, if any (see the class comment).
  ~RingSlot() {
    if (op_ != nullptr) drop();
  }

  /// The operation in flight, or null (spool's sources only).
  StreamOp*& op() noexcept { return op_; }

 private:
  SPOOL_API void drop() noexcept;  // src/net/ring_stream.cpp

  StreamOp* op_ = nullptr;
};

}  // namespace spool::detail
