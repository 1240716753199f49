// UringPoller: the I/O driver's waits on io_uring — one multishot poll per registration
// (IORING_OP_POLL_ADD with IORING_POLL_ADD_MULTI), the timeout of a wait passed to the kernel
// with the wait itself (IORING_FEAT_EXT_ARG).
#include <cerrno>
#include <system_error>

#include "driver/io/io_poller.hpp"

#ifdef SPOOL_HAVE_LIBURING

#include <liburing.h>
#include <poll.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "spool/detail/atomic.hpp"
#include "spool/detail/fatal_misuse.hpp"

namespace spool::detail {

namespace {

// The user_data of a completion: a registration's poll carries its address; an asynchronous
// removal of that poll, the address with the low bit set (a ScheduledIo is aligned); the
// wake eventfd's poll, 0.
constexpr std::uint64_t kWakeTag = 0;
constexpr std::uint64_t kRemoval = 1;
static_assert(alignof(ScheduledIo) >= 2, "the low bit of a registration's address tags removals");

constexpr unsigned kPollMask = POLLIN | POLLOUT | POLLRDHUP;

// The poller whose completions this thread last waited for (set by UringPoller::wait): a
// thread that drives the runtime (a worker, the background driver, a current-thread
// runtime's block_on), which will run that ring's task_work again soon.
thread_local const void* tl_waited_on = nullptr;

// The checks the poller and probe_uring share: sets up `ring` with `entries` entries and
// the given completion queue size (0: the default); throws std::system_error, the ring
// closed, where io_uring cannot serve as the driver.
void setup(io_uring& ring, unsigned entries, unsigned cq_entries) {
  io_uring_params p{};
  // COOP_TASKRUN (Linux 5.19): a completion's task_work waits for its thread's next return
  // from the kernel instead of interrupting it (a sleeping thread is still woken); without
  // it, each socket wake-up would send an inter-processor interrupt to a running worker.
  p.flags = IORING_SETUP_COOP_TASKRUN;
  if (cq_entries != 0) {
    p.flags |= IORING_SETUP_CQSIZE;
    p.cq_entries = cq_entries;
  }
  int r = io_uring_queue_init_params(entries, &ring, &p);
  if (r == -EINVAL) {  // before 5.19: without it
    p.flags &= ~IORING_SETUP_COOP_TASKRUN;
    r = io_uring_queue_init_params(entries, &ring, &p);
  }
  if (r < 0) throw_errno(-r, "spool: io_uring_setup for the I/O driver");
  // IORING_FEAT_RSRC_TAGS came with Linux 5.13, as multishot polls did.
  if ((p.features & IORING_FEAT_EXT_ARG) == 0 || (p.features & IORING_FEAT_RSRC_TAGS) == 0) {
    io_uring_queue_exit(&ring);
    throw std::system_error(std::make_error_code(std::errc::function_not_supported),
                            "spool: the io_uring I/O driver needs Linux 5.13 or later "
                            "(multishot polls, timed waits); use IoBackend::kEpoll or kAuto");
  }
}

// Readiness through io_uring, as epoll gives it: each registration is one multishot poll,
// which posts a completion (the poll mask) at every wake-up of the socket, as an
// edge-triggered epoll registration reports every edge. The kernel ends a multishot poll by
// a completion without IORING_CQE_F_MORE — after a removal, or on its own (the completion
// queue overflowed; the thread that submitted it exited, which cancels its requests): the
// driver then arms it again unless it was removed (IoDriver::finish).
//
// Who submits a poll matters twice. The kernel posts each of its completions from a
// task_work of the thread that submitted it (at that thread's next return from the kernel,
// or waking it if it sleeps); and a poll holds a reference to the socket's file, so a
// socket's close takes effect only once the poll's cancellation has completed, which that
// thread's task_work does. A socket opened on a thread that drives the runtime (one that
// has waited on this ring: a worker) has its poll submitted by that thread, at once, and
// removed with a synchronous cancel (IORING_REGISTER_SYNC_CANCEL, Linux 6.0; before it, an
// asynchronous IORING_OP_POLL_REMOVE): when the socket is closed on the thread that opened
// it (the usual case), the cancellation completes as that thread leaves the syscall,
// before the close, which then releases the socket at once, as with epoll. A socket opened
// on any other thread (the thread of a multi-thread runtime's block_on, a foreign
// executor's) has its poll handed to the holder, which submits it before its next wait:
// every wake-up of that socket would otherwise go through a thread that mostly sleeps
// elsewhere (W10 ran 1.4 times slower so) or may have exited. Its close, if done on a
// thread other than the poll's, completes when that thread next runs its task_work (soon:
// it drives the runtime). The wake eventfd's poll, whose completions must wake only the
// holder, is submitted by the holder itself.
//
// The submission queue is shared by every thread under sq_mutex_; only the holder reads
// the completion queue.
class UringPoller final : public IoPoller {
 public:
  UringPoller() {
    setup(ring_, 256, 4096);  // a completion per socket wake-up: room for bursts
    // A cancel of nothing: ENOENT where synchronous cancels exist, EINVAL before 6.0.
    io_uring_sync_cancel_reg reg{};
    reg.addr = kWakeTag;
    reg.timeout.tv_sec = -1;
    reg.timeout.tv_nsec = -1;
    sync_cancel_ = io_uring_register_sync_cancel(&ring_, &reg) != -EINVAL;
  }
  ~UringPoller() override { io_uring_queue_exit(&ring_); }

  void arm(ScheduledIo* io, const char* what) override {
    std::unique_lock lock(sq_mutex_);
    if (tl_waited_on != this) {
      handed_over_.push_back(io);
      // Release: pairs with submit_pending's acquire.
      queued_.store(true, std::memory_order_release);
      lock.unlock();
      wake_.signal();
      return;
    }
    io_uring_sqe* sqe = next_sqe_locked();
    if (sqe == nullptr) throw_errno(EBUSY, std::string(what) + ": io_uring submission queue");
    io_uring_prep_poll_multishot(sqe, io->fd(), kPollMask);
    io_uring_sqe_set_data64(sqe, reinterpret_cast<std::uint64_t>(io));
    if (const int r = submit_locked(); r < 0) {
      // The kernel took nothing: the entry is still ours. Made a no-op, it goes with the
      // next submission without naming the registration the caller is about to free.
      io_uring_prep_nop(sqe);
      io_uring_sqe_set_data64(sqe, kRemoval);
      throw_errno(-r, std::string(what) + ": io_uring poll");
    }
  }

  bool disarm(ScheduledIo* io) noexcept override {
    {
      std::lock_guard lock(sq_mutex_);
      if (const auto it = std::find(handed_over_.begin(), handed_over_.end(), io);
          it != handed_over_.end()) {
        handed_over_.erase(it);
        return true;  // never submitted: nothing of the kernel's names it
      }
      // Entries a submission left (the kernel took only part of them) go now, so that the
      // cancel below finds this poll if it is among them.
      if (io_uring_sq_ready(&ring_) > 0) (void)submit_locked();
    }
    const auto tag = reinterpret_cast<std::uint64_t>(io);
    if (sync_cancel_) {
      io_uring_sync_cancel_reg reg{};
      reg.addr = tag;
      reg.timeout.tv_sec = -1;
      reg.timeout.tv_nsec = -1;
      // 0: cancelled (the poll's last completion follows); ENOENT: the poll had ended
      // already (its last completion came or comes). Anything else: asynchronously.
      const int r = io_uring_register_sync_cancel(&ring_, &reg);
      if (r == 0 || r == -ENOENT) return false;
    }
    remove_async(tag);
    return false;  // freed at the poll's last completion
  }

  void wait(const timespec* timeout, std::vector<IoEvent>& out) override {
    tl_waited_on = this;
    // Entries the kernel did not take (and the wake poll, first or again) are submitted
    // here; while that fails, wait at most a millisecond (an unpark cannot end a wait
    // without the eventfd's poll).
    if (!submit_pending()) {
      static constexpr timespec kRetry{0, 1'000'000};  // static: `timeout` outlives the block
      if (timeout == nullptr || timeout->tv_sec > 0 || timeout->tv_nsec > kRetry.tv_nsec) {
        timeout = &kRetry;
      }
    }
    io_uring_cqe* cqe = nullptr;
    int r;
    if (timeout == nullptr) {
      r = io_uring_wait_cqe(&ring_, &cqe);
    } else if (timeout->tv_sec == 0 && timeout->tv_nsec == 0) {
      r = io_uring_peek_cqe(&ring_, &cqe);  // the maintenance tick: no syscall if none is due
    } else {
      __kernel_timespec ts{timeout->tv_sec, timeout->tv_nsec};
      r = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
    }
    // ETIME: the timeout; EINTR: a signal (a spurious return, which Park allows); EAGAIN:
    // nothing to peek. Anything else (EBADR: completions lost to an overflow) leaves
    // registrations whose events may be gone: no way to go on.
    if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN) {
      const std::string what =
          "spool: waiting for io_uring completions failed: " + std::system_category().message(-r);
      fatal_misuse(what.c_str());
    }
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      const bool last = (cqe->flags & IORING_CQE_F_MORE) == 0;
      const std::uint64_t tag = io_uring_cqe_get_data64(cqe);
      if (tag == kWakeTag) {
        wake_.drain();
        if (last) wake_armed_ = false;  // armed again by the next wait
      } else if ((tag & kRemoval) != 0) {
        // EALREADY: the poll was running its task_work and could not be removed then; it
        // stays armed, so the removal is tried again, at each wait until the task_work has
        // run (the registration lives until the poll's last completion, which has not come
        // yet). Other results end nothing here.
        if (cqe->res == -EALREADY) remove_async(tag & ~kRemoval);
      } else {
        const std::uint32_t bits =
            cqe->res > 0 ? readiness_of(static_cast<std::uint32_t>(cqe->res)) : 0;
        // A poll that ended with an error other than a cancellation failed for good.
        const int error = last && cqe->res < 0 && cqe->res != -ECANCELED ? -cqe->res : 0;
        out.push_back({reinterpret_cast<ScheduledIo*>(tag), bits, last, error});
      }
    }
    io_uring_cq_advance(&ring_, seen);
  }

  void wake() noexcept override { wake_.signal(); }

 private:
  // An entry of the submission queue, or null when the kernel takes none (after failed
  // submissions: the queue is full of entries it refused).
  io_uring_sqe* next_sqe_locked() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr && submit_locked() >= 0) sqe = io_uring_get_sqe(&ring_);
    return sqe;
  }
  // io_uring_submit, again after EINTR, and a few times after EAGAIN (the kernel is short
  // of memory): its result.
  int submit_locked() {
    int r;
    int tries = 0;
    do {
      r = io_uring_submit(&ring_);
    } while (r == -EINTR || (r == -EAGAIN && ++tries < 3));
    return r;
  }
  // The holder, before it waits: arms the wake poll if it is not, the polls handed over to
  // it, and submits what earlier submissions left. False if something is left still.
  bool submit_pending() {
    // Acquire: pairs with arm's and remove_async's releases.
    const bool pending = queued_.exchange(false, std::memory_order_acquire);
    if (wake_armed_ && !pending) return true;
    std::lock_guard lock(sq_mutex_);
    if (!wake_armed_) {
      io_uring_sqe* sqe = next_sqe_locked();
      if (sqe == nullptr) return left_locked();
      io_uring_prep_poll_multishot(sqe, wake_.fd(), POLLIN);
      io_uring_sqe_set_data64(sqe, kWakeTag);
      wake_armed_ = true;
    }
    // In rounds of what the submission queue holds (a burst of connections made outside the
    // runtime may hand over more polls than that).
    std::vector<io_uring_sqe*> armed;
    for (;;) {
      armed.clear();
      while (!handed_over_.empty()) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);  // not next_sqe_locked: no submission
        if (sqe == nullptr) break;
        ScheduledIo* io = handed_over_.back();
        handed_over_.pop_back();
        io_uring_prep_poll_multishot(sqe, io->fd(), kPollMask);
        io_uring_sqe_set_data64(sqe, reinterpret_cast<std::uint64_t>(io));
        armed.push_back(sqe);
      }
      if (submit_locked() < 0) {
        // The kernel took nothing: the polls go back to the hand-over list (where disarm
        // finds them), their entries become no-ops.
        for (io_uring_sqe* sqe : armed) {
          handed_over_.push_back(reinterpret_cast<ScheduledIo*>(sqe->user_data));
          io_uring_prep_nop(sqe);
          io_uring_sqe_set_data64(sqe, kRemoval);
        }
        return left_locked();
      }
      if (handed_over_.empty()) return true;
      if (armed.empty()) return left_locked();  // no room even after a submission
    }
  }
  // Something is left to submit: the next wait tries again. Always false.
  bool left_locked() {
    queued_.store(true, std::memory_order_relaxed);
    return false;
  }
  // Submits the removal of the poll whose user_data is `tag` (its completion says whether it
  // worked; see wait). If the kernel takes nothing now, the entry stays queued for the
  // holder's next wait; if the queue is full of refused entries, the removal is lost and
  // the poll (and its registration, and its file) stays until the ring is closed. A queued
  // removal whose poll ends meanwhile (its registration freed, the address reused) may
  // cancel the new registration's poll: that one then ends without having been removed,
  // and the driver arms it again (IoDriver::finish).
  void remove_async(std::uint64_t tag) noexcept {
    std::lock_guard lock(sq_mutex_);
    io_uring_sqe* sqe = next_sqe_locked();
    if (sqe == nullptr) return;
    io_uring_prep_poll_remove(sqe, tag);
    io_uring_sqe_set_data64(sqe, tag | kRemoval);
    // Release: pairs with submit_pending's acquire.
    if (submit_locked() < 0) queued_.store(true, std::memory_order_release);
  }

  WakeEvent wake_;
  io_uring ring_{};
  bool sync_cancel_ = false;  // set by the constructor: IORING_REGISTER_SYNC_CANCEL works
  std::mutex sq_mutex_;       // the submission queue's (any thread that arms or disarms)
  // The holder's alone: the eventfd's poll is armed (by the holder's first wait, and again
  // by the wait after it ended).
  bool wake_armed_ = false;
  // Registrations armed by threads that do not drive the runtime, for the holder to submit
  // (guarded by sq_mutex_).
  std::vector<ScheduledIo*> handed_over_;
  // True while something waits for the holder's submission: entries the kernel refused, or
  // handed_over_ polls. Stored (release) under sq_mutex_ by arm and by a removal whose
  // submission failed (relaxed by the holder itself); exchanged (acquire) by the holder
  // before each wait, which then submits under sq_mutex_.
  Atomic<bool> queued_{false};
};

}  // namespace

std::unique_ptr<IoPoller> make_uring_poller() { return std::make_unique<UringPoller>(); }

void probe_uring() {
  io_uring ring{};
  setup(ring, 2, 0);
  io_uring_queue_exit(&ring);
}

}  // namespace spool::detail

#else  // !SPOOL_HAVE_LIBURING

namespace spool::detail {

std::unique_ptr<IoPoller> make_uring_poller() {
  probe_uring();
  return nullptr;  // not reached
}

void probe_uring() {
  throw std::system_error(std::make_error_code(std::errc::function_not_supported),
                          "spool: this build of spool has no io_uring driver (liburing-dev was "
                          "not found when it was configured); use IoBackend::kEpoll or kAuto");
}

}  // namespace spool::detail

#endif
