// Socket streams' receives and sends on the worker's own io_uring (ring_stream.hpp).
#include "net/ring_stream.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <optional>

#include "spool/detail/ring_slot.hpp"

namespace spool::detail {

namespace {

// An operation the kernel did not run (its ring ended: the thread left, or blocks in
// block_in_place; a cancelled call in the kernel's worker answers EINTR, or its internal
// ERESTARTSYS): nothing was moved, and the readiness path runs the call.
bool not_run(int result) noexcept {
  constexpr int kRestartSys = 512;
  return result == -ECANCELED || result == -EINTR || result == -kRestartSys;
}

}  // namespace

StreamOp* StreamOp::make(RingFd& fd, bool send) {
  void* mem = ::operator new(sizeof(StreamOp) + kRingRoom);
  stream_ops_made.fetch_add(1, std::memory_order_relaxed);
  return new (mem) StreamOp(fd, send);
}

void StreamOp::drop_from_future() noexcept {
  RingFd& fd = fd_;  // (kept alive by this operation's reference until it is released)
  if (send_) {
    // A send nobody waits for is stopped: it would hold the socket open while the peer
    // reads nothing. It keeps the write side until its answer (released()): a later send
    // on another ring could otherwise go out before the rest of this one.
    holds_write_side_ = true;
    cancel();
    return;
  }
  const std::optional<int> r = result_if_done();
  // Answered with nothing left for a read (every byte taken, the end, a cancel): back to
  // the socket's keeping.
  if (r && (*r >= 0 ? static_cast<std::size_t>(*r) == taken : not_run(*r))) {
    fd.end_read(nullptr);
    abandon();
    return;
  }
  fd.end_read(this);  // still in flight, or bytes (or an error) the next read gets
}

void StreamOp::released() noexcept {
  RingFd& fd = fd_;
  const bool dropped_send = holds_write_side_;
  fd.keep_op(this);  // (another thread may take it once the write side is given back)
  if (dropped_send) fd.end_write();
  fd.unref();
}

void RingSlot::drop() noexcept { std::exchange(op_, nullptr)->drop_from_future(); }

bool ring_send_pending(IoSource& source, Context& cx) {
  RingFd* fd = source.ring_fd();
  if (fd == nullptr) return false;
  if (!fd->claim_write(cx)) return true;
  fd->end_write();
  return false;
}

RingFd& make_ring_fd(IoSource& source) {
  Atomic<RingFd*>& slot = source.ring_fd_slot();
  RingFd* seen = slot.load(std::memory_order_acquire);
  if (seen != nullptr) return *seen;
  auto* made = new RingFd(source.fd());
  if (slot.compare_exchange_strong(seen, made, std::memory_order_acq_rel)) return *made;
  delete made;  // the other half's operation made one first
  return *seen;
}

RingFd::~RingFd() {
  // (After the last unref, whose acq_rel ordered every keep_op before it.)
  for (Atomic<StreamOp*>& kept : kept_) delete kept.load(std::memory_order_relaxed);
}

void RingFd::unref() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (close_at_end_) ::close(fd_);
  delete this;
}

void RingFd::end() noexcept {
  closed_.store(true, std::memory_order_seq_cst);
  cancel_orphan();
  unref();
}

void RingFd::close_when_done() noexcept {
  // A receive in flight (its future holds the read side) would keep the descriptor open, and
  // its task waiting, until the peer sent. Shut down for reading, the kernel answers it with
  // the end of the stream: the task wakes and its next poll finds the socket closed. (Not for
  // writing: a send held by a dropped future, e.g. a TLS alert, must still go out.) Acquire:
  // the closer learned of the waiting task through some synchronisation (a close racing the
  // claim itself is a data race on the socket object, docs/io.md).
  if ((read_.load(std::memory_order_acquire) & kHeld) != 0) ::shutdown(fd_, SHUT_RD);
  end();
}

void RingFd::release_when_done() noexcept {
  close_at_end_ = false;
  end();
}

void RingFd::cancel_orphan() noexcept {
  std::uintptr_t v = read_.load(std::memory_order_seq_cst);
  while ((v & ~kBits) != 0) {
    if (read_.compare_exchange_weak(v, v & kBits, std::memory_order_seq_cst)) {
      reinterpret_cast<StreamOp*>(v & ~kBits)->cancel();
      return;
    }
  }
}

bool RingFd::claim(std::size_t dir, Atomic<std::uintptr_t>& side, std::uintptr_t& was,
                   Context* cx) {
  std::uintptr_t v = side.load(std::memory_order_relaxed);
  bool registered = false;
  for (;;) {
    if ((v & kHeld) == 0) {
      if (side.compare_exchange_weak(v, kHeld | (v & kWaiting), std::memory_order_acq_rel,
                                     std::memory_order_relaxed)) {
        was = v;
        return true;
      }
      continue;
    }
    if (cx == nullptr) return false;
    if (!registered) {
      {
        std::lock_guard lock(waiters_mutex_);
        waiters_[dir].push_back(cx->waker());  // (a stale one, if the claim succeeds after)
      }
      registered = true;
      v = side.load(std::memory_order_seq_cst);
      continue;
    }
    if ((v & kWaiting) != 0) return false;  // the next give_back wakes the list it is in
    if (side.compare_exchange_weak(v, v | kWaiting, std::memory_order_seq_cst)) return false;
  }
}

void RingFd::give_back(std::size_t dir, Atomic<std::uintptr_t>& side, std::uintptr_t to) noexcept {
  if ((side.exchange(to, std::memory_order_seq_cst) & kWaiting) == 0) return;
  std::vector<Waker> woken;
  {
    std::lock_guard lock(waiters_mutex_);
    woken.swap(waiters_[dir]);
  }
  for (Waker& w : woken) std::move(w).wake();
}

bool RingFd::claim_read(StreamOp*& orphan, Context* cx) {
  std::uintptr_t was = 0;
  if (!claim(kRead, read_, was, cx)) return false;
  orphan = reinterpret_cast<StreamOp*>(was & ~kBits);
  return true;
}

bool RingFd::claim_write(Context& cx) {
  std::uintptr_t was = 0;
  return claim(kWrite, write_, was, &cx);
}

void RingFd::end_read(StreamOp* orphan) noexcept {
  if (orphan == nullptr) {
    give_back(kRead, read_, 0);
    return;
  }
  // The socket's end may cancel the orphan from here on, and free this with it.
  ref();
  give_back(kRead, read_, reinterpret_cast<std::uintptr_t>(orphan));
  // The socket ended meanwhile (a future dropped after its socket's close): end() may have
  // looked before the exchange; whichever of the two takes the orphan cancels it.
  if (closed_.load(std::memory_order_seq_cst)) cancel_orphan();
  unref();
}

StreamOp* RingFd::take_op(bool send) {
  StreamOp* op = kept_[send].exchange(nullptr, std::memory_order_acquire);
  if (op == nullptr) {
    op = StreamOp::make(*this, send);
  } else {
    op->reuse();
  }
  ref();
  return op;
}

void RingFd::keep_op(StreamOp* op) noexcept {
  StreamOp* none = nullptr;
  if (!kept_[op->is_send()].compare_exchange_strong(none, op, std::memory_order_release,
                                                    std::memory_order_relaxed)) {
    delete op;  // another came back first (a new one was made while this one was in flight)
  }
}

}  // namespace spool::detail

#ifdef SPOOL_HAVE_LIBURING

#include <liburing.h>
#include <sys/socket.h>

#include "driver/io/scheduled_io.hpp"
#include "driver/io/thread_ring.hpp"

namespace spool::detail {

namespace {

// This thread's ring if it runs `opcode` on this socket, else null.
WorkerRing* ring_for(const IoSource& source, unsigned opcode) {
  if (this_thread_ring == nullptr || source.fd() < 0) return nullptr;
  WorkerRing* ring = this_thread_ring->ring();
  return ring != nullptr && ring->supports(opcode) ? ring : nullptr;
}

// direct_transfer's answer when the socket has no bytes (no room) now.
constexpr long kWouldBlock = LONG_MIN + 2;

// One non-blocking recv into (send from) [data, data + len): the count, -errno, or
// kWouldBlock.
long direct_transfer(int sock, std::byte* data, std::size_t len, bool send) noexcept {
  const ssize_t n = send ? ::send(sock, data, len, MSG_DONTWAIT | MSG_NOSIGNAL)
                         : ::recv(sock, data, len, MSG_DONTWAIT);
  if (n >= 0) return n;
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? kWouldBlock : -errno;
}

// A read's operation: the socket's orphan, or a receive pushed now; null for the readiness
// path (a peek, or an empty read, without an orphan; no ring here; a peek while another
// read holds the read side), with `busy` set while another read holds it (the task is
// woken when it is given back), or with `direct` set to a recv's answer (into `dest`).
StreamOp* start_read(IoSource& source, Context& cx, std::byte* dest, std::size_t len, bool peek,
                     bool& busy, long& direct) {
  RingFd* fd = source.ring_fd();
  WorkerRing* ring = nullptr;
  if (fd == nullptr || !fd->has_orphan()) {
    if (peek || len == 0) return nullptr;
    ring = ring_for(source, IORING_OP_RECV);
    if (ring == nullptr) return nullptr;
    if (fd == nullptr) fd = &make_ring_fd(source);
  }
  StreamOp* op = nullptr;
  if (!fd->claim_read(op, peek ? nullptr : &cx)) {  // (a peek: MSG_PEEK beside the read)
    busy = !peek;
    return nullptr;
  }
  if (op != nullptr) return op;  // the orphan's bytes first
  if (ring == nullptr &&
      (peek || len == 0 || (ring = ring_for(source, IORING_OP_RECV)) == nullptr)) {
    fd->end_read(nullptr);
    return nullptr;
  }
  const std::size_t want = std::min(len, kRingRoom);
  if (fd->recv_filled() && len > want) {
    // The last receive filled its buffer: more is likely queued, and a large read takes it
    // straight into the caller's buffer, as on epoll (see ring_write).
    direct = direct_transfer(source.fd(), dest, len, false);
    if (direct != kWouldBlock) {
      fd->set_recv_filled(direct > 0 && static_cast<std::size_t>(direct) == len);
      fd->end_read(nullptr);
      return nullptr;
    }
    fd->set_recv_filled(false);  // drained: the receive waits for the next bytes
  }
  try {
    op = fd->take_op(false);
  } catch (...) {
    fd->end_read(nullptr);
    throw;
  }
  op->asked = want;
  const int sock = source.fd();
  if (!ring->push_batched(
          op, [&](io_uring_sqe* sqe) { io_uring_prep_recv(sqe, sock, op->data(), want, 0); })) {
    fd->end_read(nullptr);
    op->released();  // never handed to the ring
    return nullptr;
  }
  return op;
}

// The operation a future goes on with: the one in `slot` (or none), unless that is another
// socket's than `source`'s. Then the future's socket object now holds another socket: if the
// first one ended (the object was closed by an assignment), the future gives its operation
// up and starts over on the new one, as the readiness path does; else the first one was
// moved away, and lives on elsewhere: a misuse, refused as the readiness path does.
StreamOp* op_for(RingSlot& slot, const IoSource& source) {
  StreamOp* op = slot.op();
  if (op == nullptr || source.ring_fd() == &op->socket()) [[likely]] {
    return op;
  }
  if (!op->socket().ended()) throw_socket_moved_away();
  slot = RingSlot();  // (a send is cancelled; a receive's bytes stay with the old socket)
  return nullptr;
}

}  // namespace

long ring_read(RingSlot& slot, Context& cx, IoSource& source, std::byte* dest, std::size_t len,
               bool peek) {
  StreamOp* op = op_for(slot, source);
  if (op == nullptr) {
    bool busy = false;
    long direct = kNotOnRing;
    op = start_read(source, cx, dest, len, peek, busy, direct);
    if (op == nullptr) return busy ? kRingPending : direct;
    slot.op() = op;
  }
  const std::optional<int> r = op->poll_result(cx);
  if (!r) return kRingPending;
  slot.op() = nullptr;
  RingFd& fd = op->socket();  // (kept alive by op's reference until op is released)
  if (*r < 0) {
    fd.end_read(nullptr);
    op->abandon();
    return not_run(*r) ? kNotOnRing : *r;
  }
  const std::size_t got = static_cast<std::size_t>(*r);
  fd.set_recv_filled(got == op->asked);
  const std::size_t n = std::min(got - op->taken, len);
  if (n > 0) std::memcpy(dest, op->data() + op->taken, n);
  if (!peek) op->taken += n;
  if (op->taken < got) {
    fd.end_read(op);  // the rest, for the next read
  } else {
    fd.end_read(nullptr);
    op->abandon();
  }
  return static_cast<long>(n);
}

long ring_write(RingSlot& slot, Context& cx, IoSource& source, const std::byte* src,
                std::size_t len) {
  StreamOp* op = op_for(slot, source);
  if (op == nullptr) {
    if (len == 0) return kNotOnRing;
    WorkerRing* ring = ring_for(source, IORING_OP_SEND);
    if (ring == nullptr) return ring_send_pending(source, cx) ? kRingPending : kNotOnRing;
    RingFd& fd = make_ring_fd(source);
    if (!fd.claim_write(cx)) return kRingPending;  // woken when the other write ends
    const int sock = source.fd();
    if (len > kRingRoom) {
      // A large write goes straight from the caller's buffer while the socket takes it, as
      // on epoll (one system call per large write, no copy): through the ring's buffer a
      // reply would leave a piece at a time, and live that much longer (issue 30).
      const long sent = direct_transfer(sock, const_cast<std::byte*>(src), len, true);
      if (sent != kWouldBlock) {
        fd.end_write();
        return sent;
      }
    }
    const std::size_t n = std::min(len, kRingRoom);
    try {
      op = fd.take_op(true);
    } catch (...) {
      fd.end_write();
      throw;
    }
    std::memcpy(op->data(), src, n);
    if (!ring->push_batched(op, [&](io_uring_sqe* sqe) {
          // MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE.
          io_uring_prep_send(sqe, sock, op->data(), n, MSG_NOSIGNAL);
        })) {
      fd.end_write();
      op->released();  // never handed to the ring
      return kNotOnRing;
    }
    slot.op() = op;
  }
  const std::optional<int> r = op->poll_result(cx);
  if (!r) return kRingPending;
  slot.op() = nullptr;
  op->socket().end_write();  // (op's reference keeps the socket's RingFd alive)
  op->abandon();
  return not_run(*r) ? kNotOnRing : *r;
}

}  // namespace spool::detail

#else  // !SPOOL_HAVE_LIBURING: no ring; every call takes the readiness path

namespace spool::detail {

long ring_read(RingSlot&, Context&, IoSource&, std::byte*, std::size_t, bool) { return kNotOnRing; }
long ring_write(RingSlot&, Context&, IoSource&, const std::byte*, std::size_t) {
  return kNotOnRing;
}

}  // namespace spool::detail

#endif
