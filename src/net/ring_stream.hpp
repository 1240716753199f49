// A socket stream's receives and sends as operations on the polling worker's own io_uring
// (driver/io/worker_ring.hpp), the io_uring backend's path for TcpStream and UnixStream reads
// and writes: many go to the kernel in one system call, and none asks for readiness first.
// Elsewhere (epoll, a thread that is no worker, a kernel without the operations) each call
// answers kNotOnRing and the future takes the readiness path. docs/io.md, "Sockets on the
// worker's ring".
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>

#include "driver/io/thread_ring.hpp"
#include "driver/io/worker_ring.hpp"
#include "spool/core/context.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/io_source.hpp"
#include "spool/detail/ring_slot.hpp"

namespace spool::detail {

// A call's answers besides a result (>= 0) or -errno.
inline constexpr long kNotOnRing = LONG_MIN;        // take the readiness path
inline constexpr long kRingPending = LONG_MIN + 1;  // the task waits for the completion

class StreamRecvOp;

// What an IoSource's descriptor shares with its operations on rings: the last of the socket
// and its operations closes the descriptor (so that an entry not yet submitted never names
// a number the close let another file reuse), and the socket's next read takes the bytes of
// a receive whose future was dropped (the orphan).
class RingFd {
 public:
  explicit RingFd(int fd) noexcept : fd_(fd) {}
  ~RingFd() = default;  // by the last unref (or one never shared: make_ring_fd)
  RingFd(const RingFd&) = delete;
  RingFd& operator=(const RingFd&) = delete;

  int fd() const noexcept { return fd_; }
  void ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void unref() noexcept;
  // The socket's end (IoSource::close): its reference goes, the orphan is cancelled, and the
  // last reference closes the descriptor.
  void close_when_done() noexcept;
  // IoSource::release: as close_when_done, but the descriptor stays open (the caller's).
  void release_when_done() noexcept;

  // The receive whose bytes come first, taken by the read that finds one (acquire: its
  // bytes and count were written before it was put here); null when there is none.
  StreamRecvOp* take_orphan() noexcept;
  bool has_orphan() const noexcept { return orphan_.load(std::memory_order_acquire) != nullptr; }
  // A dropped or overfull read's receive, for the next read; cancelled instead when the
  // socket is closed (or another orphan is there: two reads at once dropped theirs).
  void put_orphan(StreamRecvOp* op) noexcept;

 private:
  void end() noexcept;  // the socket's end: see close_when_done

  const int fd_;
  bool close_at_end_ = true;  // written before the socket's unref; read by the last unref
  // The socket's and each operation's. fetch_add relaxed (a holder makes another); the
  // decrements acq_rel: the last, which closes and frees, comes after every holder's use.
  Atomic<std::uint32_t> refs_{1};
  // Set by put_orphan (a compare-exchange from null, acq_rel), taken by take_orphan or the
  // socket's end (exchange, acq_rel). seq_cst against closed_: a put after the end cancels
  // what it put (see put_orphan).
  Atomic<StreamRecvOp*> orphan_{nullptr};
  Atomic<bool> closed_{false};  // set by the socket's end (seq_cst), then orphan_ taken
};

// An operation on a socket's RingFd, held by a RingSlot while its future waits.
class StreamRingOp : public RingOp {
 public:
  explicit StreamRingOp(RingFd& fd) noexcept : fd_(fd) { fd_.ref(); }
  ~StreamRingOp() override { fd_.unref(); }
  // The future gives it up (RingSlot's drop): a send is cancelled, a receive orphaned.
  virtual void drop_from_future() noexcept = 0;
  RingFd& socket() noexcept { return fd_; }

 protected:
  RingFd& fd_;
};

// `source`'s RingFd, made now if it has none (throws std::bad_alloc).
RingFd& make_ring_fd(IoSource& source);

// Whether ring_read / ring_write may do anything for a future holding `slot`: an operation
// in flight, a worker with a ring (on io_uring), or a socket with ring state (an orphan).
// Three loads, inline: on epoll every read and write asks, and all three are null.
inline bool ring_may_serve(RingSlot& slot, const IoSource& source) noexcept {
  return slot.op() != nullptr || this_thread_ring != nullptr || source.ring_fd() != nullptr;
}

// One read into `dest` on this thread's ring (`peek`: the bytes stay for the next read; a
// peek only ever takes an orphan's, else the readiness path): the count, 0 at the end of
// the stream, -errno, kRingPending or kNotOnRing. `slot` belongs to the calling future.
long ring_read(RingSlot& slot, Context& cx, IoSource& source, std::byte* dest, std::size_t len,
               bool peek);
// One send of `src` (at most kMaxSend bytes of it) on this thread's ring: the count, -errno,
// kRingPending or kNotOnRing.
long ring_write(RingSlot& slot, Context& cx, IoSource& source, const std::byte* src,
                std::size_t len);
// The most one receive or send on a ring moves: each copies through a buffer of its own.
inline constexpr std::size_t kMaxRingTransfer = std::size_t{64} << 10;

}  // namespace spool::detail
