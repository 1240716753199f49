// Socket streams' receives and sends on the worker's own io_uring (ring_stream.hpp).
#include "net/ring_stream.hpp"

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

// A receive into bytes of its own, just after the object (one allocation), copied into the
// reading future's buffer when that future polls its answer; bytes it had no room for wait
// for the next read (RingFd's orphan), as do those of a receive whose future was dropped.
class StreamRecvOp final : public StreamRingOp {
 public:
  static StreamRecvOp* make(RingFd& fd, std::size_t room) {
    void* mem = ::operator new(sizeof(StreamRecvOp) + room);
    return new (mem) StreamRecvOp(fd, room);
  }
  static void operator delete(void* p) noexcept { ::operator delete(p); }

  std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this + 1); }
  std::size_t room() const noexcept { return room_; }

  void drop_from_future() noexcept override {
    const std::optional<int> r = result_if_done();
    // Answered with nothing left for a read (every byte taken, the end, a cancel): gone.
    if (r && (*r >= 0 ? static_cast<std::size_t>(*r) == taken : not_run(*r))) {
      abandon();
      return;
    }
    fd_.put_orphan(this);  // still in flight, or bytes (or an error) the next read gets
  }

  std::size_t taken = 0;  // of the answer's bytes, those reads took (by whoever holds it)

 private:
  StreamRecvOp(RingFd& fd, std::size_t room) noexcept : StreamRingOp(fd), room_(room) {}
  std::size_t room_;
};

// A send of a copy of the caller's bytes, just after the object (one allocation).
class StreamSendOp final : public StreamRingOp {
 public:
  static StreamSendOp* make(RingFd& fd, const std::byte* src, std::size_t len) {
    void* mem = ::operator new(sizeof(StreamSendOp) + len);
    auto* op = new (mem) StreamSendOp(fd, len);
    std::memcpy(op->data(), src, len);
    return op;
  }
  static void operator delete(void* p) noexcept { ::operator delete(p); }

  std::byte* data() noexcept { return reinterpret_cast<std::byte*>(this + 1); }
  std::size_t len() const noexcept { return len_; }

  // A send nobody waits for is stopped: it would hold the socket open while the peer
  // reads nothing.
  void drop_from_future() noexcept override { cancel(); }

 private:
  StreamSendOp(RingFd& fd, std::size_t len) noexcept : StreamRingOp(fd), len_(len) {}
  std::size_t len_;
};

void RingSlot::drop() noexcept { std::exchange(op_, nullptr)->drop_from_future(); }

RingFd& make_ring_fd(IoSource& source) {
  Atomic<RingFd*>& slot = source.ring_fd_slot();
  RingFd* seen = slot.load(std::memory_order_acquire);
  if (seen != nullptr) return *seen;
  auto* made = new RingFd(source.fd());
  if (slot.compare_exchange_strong(seen, made, std::memory_order_acq_rel)) return *made;
  delete made;  // the other half's operation made one first
  return *seen;
}

void RingFd::unref() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (close_at_end_) ::close(fd_);
  delete this;
}

void RingFd::end() noexcept {
  closed_.store(true, std::memory_order_seq_cst);
  if (StreamRecvOp* o = orphan_.exchange(nullptr, std::memory_order_seq_cst)) o->cancel();
  unref();
}

void RingFd::close_when_done() noexcept { end(); }

void RingFd::release_when_done() noexcept {
  close_at_end_ = false;
  end();
}

StreamRecvOp* RingFd::take_orphan() noexcept {
  return orphan_.exchange(nullptr, std::memory_order_acq_rel);
}

void RingFd::put_orphan(StreamRecvOp* op) noexcept {
  StreamRecvOp* none = nullptr;
  if (!orphan_.compare_exchange_strong(none, op, std::memory_order_seq_cst)) {
    op->cancel();  // two reads at once, both dropped: the socket keeps the first's
    return;
  }
  // The socket ended meanwhile (a future dropped after its socket's close): end() may
  // have looked before this put; whichever of the two takes it cancels it.
  if (closed_.load(std::memory_order_seq_cst)) {
    if (StreamRecvOp* o = orphan_.exchange(nullptr, std::memory_order_seq_cst)) o->cancel();
  }
}

}  // namespace spool::detail

#ifdef SPOOL_HAVE_LIBURING

#include <liburing.h>
#include <sys/socket.h>

#include "driver/io/thread_ring.hpp"

namespace spool::detail {

namespace {

// This thread's ring if it runs `opcode` on this socket, else null.
WorkerRing* ring_for(const IoSource& source, unsigned opcode) {
  if (this_thread_ring == nullptr || source.fd() < 0) return nullptr;
  WorkerRing* ring = this_thread_ring->ring();
  return ring != nullptr && ring->supports(opcode) ? ring : nullptr;
}

}  // namespace

long ring_read(RingSlot& slot, Context& cx, IoSource& source, std::byte* dest, std::size_t len,
               bool peek) {
  auto* op = static_cast<StreamRecvOp*>(slot.op());
  if (op == nullptr) {
    if (RingFd* fd = source.ring_fd(); fd != nullptr && fd->has_orphan()) op = fd->take_orphan();
    if (op == nullptr) {
      if (peek || len == 0) return kNotOnRing;
      WorkerRing* ring = ring_for(source, IORING_OP_RECV);
      if (ring == nullptr) return kNotOnRing;
      op = StreamRecvOp::make(make_ring_fd(source), std::min(len, kMaxRingTransfer));
      const int fd = source.fd();
      if (!ring->push_batched(op, [&](io_uring_sqe* sqe) {
            io_uring_prep_recv(sqe, fd, op->data(), op->room(), 0);
          })) {
        delete op;  // never handed to the ring
        return kNotOnRing;
      }
    }
    slot.op() = op;
  }
  const std::optional<int> r = op->poll_result(cx);
  if (!r) return kRingPending;
  slot.op() = nullptr;
  if (*r < 0) {
    op->abandon();
    return not_run(*r) ? kNotOnRing : *r;
  }
  const std::size_t got = static_cast<std::size_t>(*r);
  const std::size_t n = std::min(got - op->taken, len);
  std::memcpy(dest, op->data() + op->taken, n);
  if (!peek) op->taken += n;
  if (op->taken < got) {
    op->socket().put_orphan(op);  // the rest, for the next read
  } else {
    op->abandon();
  }
  return static_cast<long>(n);
}

long ring_write(RingSlot& slot, Context& cx, IoSource& source, const std::byte* src,
                std::size_t len) {
  auto* op = static_cast<StreamSendOp*>(slot.op());
  if (op == nullptr) {
    if (len == 0) return kNotOnRing;
    WorkerRing* ring = ring_for(source, IORING_OP_SEND);
    if (ring == nullptr) return kNotOnRing;
    op = StreamSendOp::make(make_ring_fd(source), src, std::min(len, kMaxRingTransfer));
    const int fd = source.fd();
    if (!ring->push_batched(op, [&](io_uring_sqe* sqe) {
          // MSG_NOSIGNAL: a closed peer is EPIPE, not SIGPIPE.
          io_uring_prep_send(sqe, fd, op->data(), op->len(), MSG_NOSIGNAL);
        })) {
      delete op;
      return kNotOnRing;
    }
    slot.op() = op;
  }
  const std::optional<int> r = op->poll_result(cx);
  if (!r) return kRingPending;
  slot.op() = nullptr;
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
