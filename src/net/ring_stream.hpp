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
#include <vector>

#include "driver/io/thread_ring.hpp"
#include "driver/io/worker_ring.hpp"
#include "spool/core/context.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/io_source.hpp"
#include "spool/detail/ring_slot.hpp"

namespace spool::detail {

// A call's answers besides a result (>= 0) or -errno.
inline constexpr long kNotOnRing = LONG_MIN;        // take the readiness path
inline constexpr long kRingPending = LONG_MIN + 1;  // the task waits for the completion

class StreamOp;

// The buffer of a socket's operation, and the most one receive or send on a ring moves
// (each copies through it). A larger read or write moves what the socket has (takes) now
// straight to (from) the caller's buffer, with one recv (send), and the ring's operation
// only waits for the next bytes (room): a socket holds 4 KiB per direction however large
// its reads and writes (issue 30: with buffers that grew to 64 KiB, replies left a piece per
// completion and 250 connections held 20 times what epoll does).
inline constexpr std::size_t kRingRoom = std::size_t{4} << 10;

// What an IoSource's descriptor shares with its operations on rings: the last of the socket
// and its operations closes the descriptor (so that an entry not yet submitted never names
// a number the close let another file reuse); one operation per direction, kept between
// reads (writes) with its buffer, so that a socket's steady traffic allocates nothing; and
// the receive whose future was dropped (the orphan), whose bytes the socket's next read
// takes first. One future at a time holds each direction (claim_read, claim_write); another
// waits for it: two receives in flight, both dropped, would make two orphans, and the
// bytes of one would be lost or come out of order.
class RingFd {
 public:
  explicit RingFd(int fd) noexcept : fd_(fd) {}
  ~RingFd();  // by the last unref (or one never shared: make_ring_fd); frees the kept ops
  RingFd(const RingFd&) = delete;
  RingFd& operator=(const RingFd&) = delete;

  int fd() const noexcept { return fd_; }
  void ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void unref() noexcept;
  // The socket's end (IoSource::close): a receive in flight is ended (shutdown for reading:
  // its task wakes), its reference goes, the orphan is cancelled, and the last reference
  // closes the descriptor.
  void close_when_done() noexcept;
  // IoSource::release: as close_when_done, but nothing is shut down and the descriptor stays
  // open (the caller's; a receive in flight goes on there until the peer sends).
  void release_when_done() noexcept;

  // The read side, for one future at a time: true with `orphan` set to the receive whose
  // bytes come first (null when there is none); false while another future holds it, and
  // `cx`'s task is woken when it is given back (not woken: `cx` null, a peek's).
  bool claim_read(StreamOp*& orphan, Context* cx);
  // Gives the read side back, leaving `orphan` (a dropped or overfull read's receive, or
  // null) for the next read; an orphan left after the socket's end is cancelled.
  void end_read(StreamOp* orphan) noexcept;
  bool has_orphan() const noexcept { return (read_.load(std::memory_order_acquire) & ~kBits) != 0; }
  // The socket's end came (closed, or released): its object was closed, not moved away.
  bool ended() const noexcept { return closed_.load(std::memory_order_seq_cst); }
  // The write side, likewise (a dropped send is cancelled, and holds it until its answer).
  bool claim_write(Context& cx);
  void end_write() noexcept { give_back(kWrite, write_, 0); }

  // The direction's operation, holding a reference to this RingFd until it is released: the
  // kept one, else a new one (throws std::bad_alloc).
  StreamOp* take_op(bool send);
  // Whether the last receive filled what it asked for (for the read side's holder): the
  // next read larger than kRingRoom then tries a recv straight into its buffer first.
  bool recv_filled() const noexcept { return recv_filled_; }
  void set_recv_filled(bool filled) noexcept { recv_filled_ = filled; }
  // Keeps a released operation for the next take_op (frees it if one is kept already).
  void keep_op(StreamOp* op) noexcept;

 private:
  // Each side's word (read_, write_): these bits, and in read_ the orphan's address (an
  // operation's alignment leaves the bits free), only while no future holds the side.
  static constexpr std::uintptr_t kHeld = 1;     // a future holds the side
  static constexpr std::uintptr_t kWaiting = 2;  // a future waits for it (in waiters_)
  static constexpr std::uintptr_t kBits = kHeld | kWaiting;
  static constexpr std::size_t kRead = 0;
  static constexpr std::size_t kWrite = 1;
  // Takes `side` (true, with its word before) or, held, registers `cx` in waiters_[dir].
  bool claim(std::size_t dir, Atomic<std::uintptr_t>& side, std::uintptr_t& was, Context* cx);
  // Gives `side` back with the word `to`, and wakes the futures waiting for it.
  void give_back(std::size_t dir, Atomic<std::uintptr_t>& side, std::uintptr_t to) noexcept;
  void end() noexcept;  // the socket's end: see close_when_done
  void cancel_orphan() noexcept;

  const int fd_;
  bool recv_filled_ = false;  // guarded by the read side (claim_read)
  bool close_at_end_ = true;  // written before the socket's unref; read by the last unref
  // The socket's and each operation's not kept here. fetch_add relaxed (a holder makes
  // another); the decrements acq_rel: the last, which closes and frees, comes after every
  // holder's use.
  Atomic<std::uint32_t> refs_{1};
  // The sides (see kHeld). A claim is a compare-exchange that sets kHeld and takes the
  // orphan (acq_rel: acquire, the orphan's bytes and count were written before it was left
  // here); a waiter, after it registered under waiters_mutex_, sets kWaiting with a
  // compare-exchange (seq_cst). give_back exchanges in the next word (seq_cst), clearing
  // both bits, and wakes waiters_ if kWaiting was set: a waiter either is in the list that
  // give_back takes after its exchange, or sees the side free when it looks again. The
  // socket's end stores closed_ (seq_cst) then takes an orphan it finds (compare-exchange,
  // seq_cst); end_read, after an exchange that leaves an orphan, loads closed_ (seq_cst): of
  // the two, one sees the other, and whichever takes the orphan cancels it. close_when_done
  // loads read_ (acquire): a future that holds it has a receive in flight.
  Atomic<std::uintptr_t> read_{0};
  Atomic<std::uintptr_t> write_{0};
  Atomic<bool> closed_{false};  // set by the socket's end (seq_cst); see read_
  // The futures waiting for each side (their wakers), guarded by waiters_mutex_.
  Mutex waiters_mutex_;
  std::vector<Waker> waiters_[2];
  // The operations kept between uses, one per direction (receive, send): taken by take_op
  // (exchange, acquire: the op's last user's writes came before its keep_op), put back by
  // keep_op (compare-exchange from null, release), on whichever thread released the op (a
  // cancelled send's completion: the ring's thread).
  Atomic<StreamOp*> kept_[2]{};
};

// An operation on a socket's RingFd (a receive or a send into a buffer of its own, just
// after the object), held by a RingSlot while its future waits; kept by the RingFd between
// uses.
class StreamOp final : public RingOp {
 public:
  // One that `fd` keeps (a reference on it is taken by take_op).
  static StreamOp* make(RingFd& fd, bool send);
  static void operator delete(void* p) noexcept { ::operator delete(p); }

  std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this + 1); }
  bool is_send() const noexcept { return send_; }
  RingFd& socket() noexcept { return fd_; }
  // For take_op: as new, for the next push.
  void reuse() noexcept {
    rearm();
    taken = 0;
    holds_write_side_ = false;
  }
  // The future gives it up (RingSlot's drop): a receive is orphaned and the read side given
  // back; a send is cancelled and gives the write side back with its answer.
  void drop_from_future() noexcept;
  // Back to its RingFd's keeping, and the RingFd's reference goes (also for one that was
  // never pushed).
  void released() noexcept override;

  std::size_t taken = 0;  // a receive's answer's bytes that reads took (by whoever holds it)
  std::size_t asked = 0;  // a receive's length (set by whoever pushes it)

 private:
  StreamOp(RingFd& fd, bool send) noexcept : fd_(fd), send_(send) {}
  RingFd& fd_;
  const bool send_;
  // A dropped send's: it gives the socket's write side back when it is released. Written
  // before cancel(), whose reference drops (acq_rel) order it before released().
  bool holds_write_side_ = false;
};

// `source`'s RingFd, made now if it has none (throws std::bad_alloc).
RingFd& make_ring_fd(IoSource& source);

// For a write that takes the readiness path: whether it must wait first, a send of `source`
// being pending on a ring (`cx`'s task is woken when it ends). A dropped send's rest must not
// follow the write's bytes.
bool ring_send_pending(IoSource& source, Context& cx);

// Whether ring_read / ring_write may do anything for a future holding `slot`: an operation
// in flight, a worker with a ring, or a socket with ring state (an orphan). Asked only for
// an io_uring runtime's sockets (IoSource::ring_streams): epoll's futures never come here.
inline bool ring_may_serve(RingSlot& slot, const IoSource& source) noexcept {
  return slot.op() != nullptr || this_thread_ring != nullptr || source.ring_fd() != nullptr;
}

// One read into `dest` on this thread's ring (`peek`: the bytes stay for the next read; a
// peek only ever takes an orphan's, else the readiness path): the count, 0 at the end of
// the stream, -errno, kRingPending or kNotOnRing. `slot` belongs to the calling future.
long ring_read(RingSlot& slot, Context& cx, IoSource& source, std::byte* dest, std::size_t len,
               bool peek);
// One send of `src` on this thread's ring (at most kRingRoom bytes of it; a larger one first
// sends what the socket takes at once): the count, -errno, kRingPending or kNotOnRing.
long ring_write(RingSlot& slot, Context& cx, IoSource& source, const std::byte* src,
                std::size_t len);
// StreamOp::make's count (relaxed: a statistic), for the tests that check that a socket's
// steady traffic allocates nothing.
inline Atomic<std::uint64_t> stream_ops_made{0};

}  // namespace spool::detail
