// WorkerRing (worker_ring.hpp).
#include "driver/io/worker_ring.hpp"

#include <cerrno>
#include <mutex>
#include <system_error>

#include "driver/io/io_poller.hpp"

namespace spool::detail {

void WorkerRing::link(RingOp* op) noexcept {
  op->next_ = in_flight_list_;
  if (in_flight_list_ != nullptr) in_flight_list_->prev_ = op;
  in_flight_list_ = op;
  ++in_flight_;
}

void WorkerRing::unlink(RingOp* op) noexcept {
  if (op->prev_ != nullptr) {
    op->prev_->next_ = op->next_;
  } else {
    in_flight_list_ = op->next_;
  }
  if (op->next_ != nullptr) op->next_->prev_ = op->prev_;
  --in_flight_;
}

std::optional<int> RingOp::poll_result(Context& cx) {
  if ((state_.load(std::memory_order_acquire) & kDone) != 0) return result_;
  waker_.register_waker(cx.waker());
  // Again after registering: a completion between the load and the registration woke
  // nobody (AtomicWaker's rule, as every leaf's).
  if ((state_.load(std::memory_order_acquire) & kDone) != 0) return result_;
  return std::nullopt;
}

void RingOp::abandon() noexcept {
  (void)waker_.take();  // the task does not wait any more: its waker goes now
  release();
}

void RingOp::cancel() noexcept {
  if ((state_.load(std::memory_order_acquire) & kDone) != 0) {
    abandon();  // nothing left to stop
    return;
  }
  (void)waker_.take();
  ring_->request_cancel(this);  // with the waiter's reference
}

void RingOp::complete(int result) noexcept {
  result_ = result;
  completed_ = true;
  state_.fetch_or(kDone, std::memory_order_release);
  waker_.wake();  // the waiter may abandon meanwhile: the ring's reference keeps it alive
  release();
}

void RingOp::release() noexcept {
  if (state_.fetch_sub(kRef, std::memory_order_acq_rel) / kRef == 1) released();
}

void RingOp::rearm() noexcept {
  // Nobody else holds it (released() ran): plain stores, published by whatever hands the
  // operation to its next user. The waker is empty: complete() and abandon() took it.
  state_.store(2 * kRef, std::memory_order_relaxed);
  result_ = 0;
  completed_ = false;
  prev_ = next_ = nullptr;
  ring_ = nullptr;
  cancel_next_ = nullptr;
}

}  // namespace spool::detail

#ifdef SPOOL_HAVE_LIBURING

#include <liburing.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "spool/detail/fatal_misuse.hpp"

namespace spool::detail {

namespace {

// The flags of each attempt, newest kernels first.
struct Attempt {
  unsigned flags;
  WorkerRing::Mode mode;
};
constexpr Attempt kAttempts[] = {
    {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
         IORING_SETUP_SUBMIT_ALL,
     WorkerRing::Mode::kDeferTaskrun},
    {IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SUBMIT_ALL,
     WorkerRing::Mode::kCoopTaskrun},
    {0, WorkerRing::Mode::kPlain},
};

// The lock of every ring's inbox (request_cancel): one for all, since a request must find
// its ring alive, and the ring's destructor takes it after its last completion.
constinit std::mutex inbox_mutex;

}  // namespace

void WorkerRing::release_requests(RingOp* list) noexcept {
  while (list != nullptr) {
    RingOp* const next = std::exchange(list->cancel_next_, nullptr);
    list->release();  // (may free it)
    list = next;
  }
}

void WorkerRing::request_cancel(RingOp* op) noexcept {
  std::unique_lock lock(inbox_mutex);
  // Complete by now (the ring's thread delivered it, or its destructor cancelled it and may
  // be about to free the ring): nothing to stop, and the ring is not touched.
  if ((op->state_.load(std::memory_order_acquire) & RingOp::kDone) != 0) {
    lock.unlock();
    op->release();
    return;
  }
  // Not complete: the ring is alive (its destructor takes this lock after its last
  // completion), and only its own thread could end it.
  if (::pthread_equal(owner_, ::pthread_self()) != 0) {
    lock.unlock();
    queue_cancel(op);
    return;
  }
  op->cancel_next_ = inbox_;
  inbox_ = op;
  inbox_waits_.store(true, std::memory_order_release);
  // Wakes the ring's thread if it sleeps watching the ring (ThreadRing::arm checks the
  // inbox after draining the eventfd, so a signal before that drain is not lost).
  const std::uint64_t one = 1;
  (void)!::write(event_fd_, &one, sizeof one);
}

void WorkerRing::queue_cancel(RingOp* op) noexcept {
  if ((op->state_.load(std::memory_order_relaxed) & RingOp::kDone) != 0) {
    op->release();  // (its completion was delivered on this thread: no cancel)
    return;
  }
  // No submit to make room here: the caller may be inside a submission (flush_cancels).
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (sqe == nullptr) {
    op->cancel_next_ = cancels_;  // retried by the next submit or reap
    cancels_ = op;
    return;
  }
  // The operation stays alive until this entry is submitted: only deliver() frees an
  // operation in flight, and every reap submits before it delivers. The cancel's own
  // completion carries no operation (data 0).
  io_uring_prep_cancel(sqe, op, 0);
  io_uring_sqe_set_data(sqe, nullptr);
  op->release();
}

void WorkerRing::flush_cancels() noexcept {
  RingOp* list = std::exchange(cancels_, nullptr);
  while (list != nullptr) {
    RingOp* const next = std::exchange(list->cancel_next_, nullptr);
    queue_cancel(list);  // back into cancels_ while the queue stays full
    list = next;
  }
}

void WorkerRing::take_inbox() noexcept {
  RingOp* requests;
  {
    std::lock_guard lock(inbox_mutex);
    requests = std::exchange(inbox_, nullptr);
    inbox_waits_.store(false, std::memory_order_relaxed);  // (under the lock)
  }
  while (requests != nullptr) {
    RingOp* const next = std::exchange(requests->cancel_next_, nullptr);
    queue_cancel(requests);
    requests = next;
  }
}

WorkerRing::WorkerRing(unsigned entries)
    : ring_(std::make_unique<io_uring>()), owner_(::pthread_self()) {
  int r = -EINVAL;
  for (const Attempt& a : kAttempts) {
    io_uring_params p{};
    p.flags = a.flags;
    r = io_uring_queue_init_params(entries, ring_.get(), &p);
    if (r != -EINVAL) {
      mode_ = a.mode;
      break;
    }
  }
  if (r < 0) throw_errno(-r, "spool: io_uring_setup for a worker's ring");
  if (io_uring_probe* probe = io_uring_get_probe_ring(ring_.get())) {
    for (unsigned op = 0; op < supported_.size(); ++op) {
      supported_[op] = io_uring_opcode_supported(probe, static_cast<int>(op)) != 0;
    }
    io_uring_free_probe(probe);
  }
  event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0 || io_uring_register_eventfd(ring_.get(), event_fd_) < 0) {
    const int err = event_fd_ < 0 ? errno : EINVAL;
    if (event_fd_ >= 0) ::close(event_fd_);
    io_uring_queue_exit(ring_.get());
    throw_errno(err, "spool: an eventfd for a worker's ring");
  }
  watch(false);  // until a watch wants it
}

WorkerRing::~WorkerRing() {
  cancel_all_and_wait();
  // Every operation has completed: the requests still waiting have nothing to stop, and no
  // request comes after this lock (each finds its operation complete, RingOp::cancel).
  RingOp* requests;
  {
    std::lock_guard lock(inbox_mutex);
    requests = std::exchange(inbox_, nullptr);
  }
  release_requests(requests);
  release_requests(std::exchange(cancels_, nullptr));
  io_uring_queue_exit(ring_.get());
  ::close(event_fd_);
}

io_uring_sqe* WorkerRing::next_sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (sqe != nullptr) return sqe;
  (void)submit();
  return io_uring_get_sqe(ring_.get());
}

void WorkerRing::track(RingOp* op, io_uring_sqe* sqe) noexcept {
  io_uring_sqe_set_data(sqe, op);
  op->ring_ = this;
  link(op);
}

bool WorkerRing::submit() noexcept {
  // EINTR, EAGAIN, EBUSY: the kernel took nothing now; the entries stay queued for the
  // next submit (each reap submits them too).
  int r = io_uring_submit(ring_.get());
  if (r >= 0) urgent_ = io_uring_sq_ready(ring_.get()) > 0;
  if (cancels_ != nullptr && r >= 0) {  // the room the submission made
    flush_cancels();
    r = io_uring_submit(ring_.get());
  }
  return r >= 0;
}

namespace {
// The kernel holds completions back: their task_work waits for an entry into the kernel,
// or they overflowed the completion queue and wait for room.
bool kernel_holds_completions(const io_uring& ring) noexcept {
  return (IO_URING_READ_ONCE(*ring.sq.kflags) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) != 0;
}
}  // namespace

bool WorkerRing::has_unsubmitted() const noexcept {
  return io_uring_sq_ready(ring_.get()) > 0 || cancels_ != nullptr || inbox_waits();
}

bool WorkerRing::may_have_completions() const noexcept {
  return io_uring_cq_ready(ring_.get()) > 0 || kernel_holds_completions(*ring_);
}

std::size_t WorkerRing::reap() noexcept {
  std::size_t n = 0;
  while (has_unsubmitted() || may_have_completions()) {
    if (inbox_waits()) take_inbox();
    if (cancels_ != nullptr) flush_cancels();  // (the last submission made room)
    // Queued entries go in the same system call.
    if (has_unsubmitted() || kernel_holds_completions(*ring_)) {
      const int r = io_uring_submit_and_get_events(ring_.get());
      // EINTR, EAGAIN, EBUSY: nothing now, the next reap tries again. Anything else
      // (EBADR: completions lost to an overflow) leaves operations that never end.
      if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY) {
        fatal_misuse("spool: reaping a worker's io_uring failed (completions lost)");
      }
      if (r < 0) break;
    }
    const std::size_t got = deliver();
    n += got;
    // The kernel may leave IORING_SQ_TASKRUN set after an entry that ran its work and
    // posted nothing (seen on Linux 6.18 with sockets' receives on the ring): looping on
    // the flag would keep this thread from its tasks, whose sends those receives wait for.
    if (got == 0 && !has_unsubmitted()) break;
  }
  return n;
}

void WorkerRing::watch(bool on) noexcept {
  // The eventfd is signalled only while a watch is on: each reap would otherwise wake the
  // thread in the driver for completions this thread delivers itself.
  (void)io_uring_cq_eventfd_toggle(ring_.get(), on);
}

void WorkerRing::drain_event() noexcept {
  std::uint64_t count;
  (void)!::read(event_fd_, &count, sizeof count);  // EAGAIN: it was not readable
}

std::size_t WorkerRing::deliver() noexcept {
  std::size_t n = 0;
  unsigned seen = 0;
  unsigned head;
  io_uring_cqe* cqe;
  io_uring_for_each_cqe(ring_.get(), head, cqe) {
    ++seen;
    auto* op = static_cast<RingOp*>(io_uring_cqe_get_data(cqe));
    if (op == nullptr) continue;  // a cancel's own completion
    unlink(op);
    op->complete(cqe->res);
    ++n;
  }
  io_uring_cq_advance(ring_.get(), seen);
  return n;
}

void WorkerRing::cancel_all_and_wait() noexcept {
  // Entries still queued go to the kernel first, so that the cancel finds them too.
  while (in_flight_ > 0) {
    (void)submit();
    // Linux 6.0 cancels everything at once, synchronously (here for at most 10 ms); before
    // it, one asynchronous cancel per operation (their own completions carry no operation:
    // data 0). What cannot be cancelled (a regular file's read already running) ends on
    // its own; the loop asks again until every answer has come.
    io_uring_sync_cancel_reg reg{};
    reg.flags = IORING_ASYNC_CANCEL_ANY;
    reg.timeout.tv_sec = 0;
    reg.timeout.tv_nsec = 10'000'000;
    const int c = io_uring_register_sync_cancel(ring_.get(), &reg);
    if (c == -EINVAL || c == -ENOSYS || c == -EOPNOTSUPP) {
      for (RingOp* op = in_flight_list_; op != nullptr; op = op->next_) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
        if (sqe == nullptr) break;  // the rest in the next round
        io_uring_prep_cancel(sqe, op, 0);
        io_uring_sqe_set_data(sqe, nullptr);
      }
    }
    __kernel_timespec ts{0, 10'000'000};
    io_uring_cqe* cqe = nullptr;
    const int r = io_uring_submit_and_wait_timeout(ring_.get(), &cqe, 1, &ts, nullptr);
    if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME) {
      fatal_misuse("spool: waiting for a worker ring's last completions failed");
    }
    deliver();
  }
}
}  // namespace spool::detail

#else  // !SPOOL_HAVE_LIBURING

struct io_uring {};  // (never made: the constructor throws)

namespace spool::detail {

// Without liburing no ring can be made: the fs operations take the blocking pool.
WorkerRing::WorkerRing(unsigned) : owner_(::pthread_self()) {
  throw std::system_error(std::make_error_code(std::errc::function_not_supported),
                          "spool: built without liburing: no io_uring ring");
}
WorkerRing::~WorkerRing() = default;
io_uring_sqe* WorkerRing::next_sqe() { return nullptr; }
void WorkerRing::track(RingOp* op, io_uring_sqe*) noexcept { link(op); }
bool WorkerRing::submit() noexcept { return false; }
bool WorkerRing::has_unsubmitted() const noexcept { return false; }
bool WorkerRing::may_have_completions() const noexcept { return false; }
std::size_t WorkerRing::reap() noexcept { return 0; }
void WorkerRing::watch(bool) noexcept {}
void WorkerRing::drain_event() noexcept {}
std::size_t WorkerRing::deliver() noexcept { return 0; }
void WorkerRing::cancel_all_and_wait() noexcept {}
void WorkerRing::release_requests(RingOp*) noexcept {}
void WorkerRing::request_cancel(RingOp*) noexcept {}
void WorkerRing::queue_cancel(RingOp*) noexcept {}
void WorkerRing::flush_cancels() noexcept {}
void WorkerRing::take_inbox() noexcept {}

}  // namespace spool::detail

#endif
