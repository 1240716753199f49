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
#include <functional>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "spool/detail/atomic.hpp"
#include "spool/detail/fatal_misuse.hpp"

namespace spool::detail {

namespace {

// The user_data of a completion. A registration's poll: its address in the low 48 bits (no
// user-space address is wider: malloc gets 47 bits on x86-64, 48 on arm64) and a
// generation in the high 16 (ScheduledIo::watch_tag), so that a removal that waited while
// its poll ended, its registration was freed and the address reused finds nothing rather
// than the new registration's poll. An asynchronous removal of a poll: the poll's
// user_data with the low bit set (a ScheduledIo is aligned). The wake eventfd's poll: 0; a
// wake's no-op: 2 (no object lives at address 2).
constexpr std::uint64_t kWakeTag = 0;
constexpr std::uint64_t kRemoval = 1;
constexpr std::uint64_t kWakeNop = 2;
constexpr int kGenerationShift = 48;
constexpr std::uint64_t kAddressMask = (std::uint64_t{1} << kGenerationShift) - 1;
static_assert(alignof(ScheduledIo) >= 2, "the low bit of a registration's address tags removals");

ScheduledIo* registration_of(std::uint64_t tag) noexcept {
  return reinterpret_cast<ScheduledIo*>(tag & kAddressMask);
}

constexpr unsigned kPollMask = POLLIN | POLLOUT | POLLRDHUP;

// Each poller's identity, for tl_waited_on: taken (fetch_add, relaxed: only uniqueness
// matters, no data is published through it) by each poller's constructor. Not its address,
// which a later poller may reuse.
Atomic<std::uint64_t> next_poller_id{1};

// The id of the poller whose completions this thread last waited for (set by
// UringPoller::wait; 0: none): a thread that drives a runtime (a worker that has held the
// driver, the background driver, a current-thread runtime's block_on), which will run that
// ring's task_work again soon.
thread_local std::uint64_t tl_waited_on = 0;

// The checks the poller and probe_uring share: sets up `ring` with `entries` entries and
// the given completion queue size (0: the default); throws std::system_error, the ring
// closed, where io_uring cannot serve as the driver.
void setup(io_uring& ring, unsigned entries, unsigned cq_entries) {
  io_uring_params p{};
  // COOP_TASKRUN (Linux 5.19): a completion's task_work waits for its thread's next return
  // from the kernel instead of interrupting it (a sleeping thread is still woken); without
  // it, each socket wake-up would send an inter-processor interrupt to a running worker.
  // TASKRUN_FLAG, its companion, marks the ring while such task_work waits, and liburing's
  // peek then enters the kernel to run it: a zero-timeout wait (a busy poll, the
  // maintenance tick) sees those completions without a sleep. SUBMIT_ALL (5.18): an entry
  // that fails at submission does not stop those after it (a partial submission is then
  // only a shortage of memory).
  constexpr unsigned kNewFlags =
      IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SUBMIT_ALL;
  p.flags = kNewFlags;
  if (cq_entries != 0) {
    p.flags |= IORING_SETUP_CQSIZE;
    p.cq_entries = cq_entries;
  }
  int r = io_uring_queue_init_params(entries, &ring, &p);
  if (r == -EINVAL) {  // before 5.19: without them
    p.flags &= ~kNewFlags;
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

// Readiness through io_uring as epoll gives it: one multishot poll per registration, armed
// again when the kernel ends it on its own (IoDriver::finish). Its completions run in the
// task_work of the thread that submitted it, so a thread that has waited on this ring
// submits its own sockets' polls at once; any other thread hands them to the thread in the
// driver (W10 ran 1.84 times slower through a mostly sleeping thread), and a wake is a no-op
// the waker submits itself. docs/io.md, "Who submits a poll", says why in full. The submission
// queue is shared under sq_mutex_; only the thread in the driver reads completions.
class UringPoller final : public IoPoller {
  static constexpr unsigned kEntries = 256;  // of the submission queue

 public:
  explicit UringPoller(UringPollerOptions options)
      : refuse_submissions_(std::move(options.refuse_submissions)) {
    setup(ring_, kEntries, 4096);  // a completion per socket wake-up: room for bursts
    armed_.reserve(kEntries);      // submit_pending never allocates under the lock
    removals_.reserve(kEntries);   // nor does remove_async, but for a long refusal
    // A cancel of nothing: ENOENT where synchronous cancels exist, EINVAL before 6.0.
    io_uring_sync_cancel_reg reg{};
    reg.addr = kWakeTag;
    reg.timeout.tv_sec = -1;
    reg.timeout.tv_nsec = -1;
    sync_cancel_ = options.sync_cancel && io_uring_register_sync_cancel(&ring_, &reg) != -EINVAL;
  }
  ~UringPoller() override { io_uring_queue_exit(&ring_); }

  void arm(ScheduledIo* io, const char* what) override {
    std::unique_lock lock(sq_mutex_);
    const std::uint64_t tag = tag_locked(io, what);
    if (tl_waited_on != id_) {
      handed_over_.push_back(io);
      leave_to_thread_in_driver(lock);
      return;
    }
    io_uring_sqe* sqe = next_sqe_locked();
    if (sqe == nullptr) throw_errno(EBUSY, std::string(what) + ": io_uring submission queue");
    io_uring_prep_poll_multishot(sqe, io->fd(), kPollMask);
    io_uring_sqe_set_data64(sqe, tag);
    if (const int r = submit_locked(); r < 0) {
      // The kernel took nothing: the entry is still ours. Made inert, it goes with the
      // next submission without naming the registration the caller is about to free.
      make_inert(sqe);
      throw_errno(-r, std::string(what) + ": io_uring poll");
    }
    if (io_uring_sq_ready(&ring_) > 0)
      leave_to_thread_in_driver(lock);  // the kernel took only part
  }

  bool disarm(ScheduledIo* io) noexcept override {
    std::uint64_t tag;
    {
      std::lock_guard lock(sq_mutex_);
      if (const auto it = std::find(handed_over_.begin(), handed_over_.end(), io);
          it != handed_over_.end()) {
        handed_over_.erase(it);
        return true;  // never submitted: nothing of the kernel's names it
      }
      tag = io->watch_tag;
      if (cancel_unsubmitted_locked(tag)) return true;
    }
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
    tl_waited_on = id_;
    // Entries the kernel did not take (and the wake poll, first or again) are submitted
    // here; while that fails, wait at most a millisecond (a queue that refuses entries
    // refuses a wake's no-op too, and the eventfd's poll may be among the refused).
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
      // The maintenance tick, a busy poll: a system call only if a completion's task_work
      // waits for one (TASKRUN_FLAG).
      r = io_uring_peek_cqe(&ring_, &cqe);
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
      if (tag == kWakeNop) {
        // Acquire: what the wakers published before their wake (pairs with wake's release
        // exchange); the next wake posts a new no-op.
        (void)wake_posted_.exchange(false, std::memory_order_acquire);
      } else if (tag == kWakeTag) {
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
        out.push_back({registration_of(tag), bits, last, error});
      }
    }
    io_uring_cq_advance(&ring_, seen);
  }

  // A no-op submitted by the waking thread completes in its own system call, which wakes
  // the thread in the driver at once. The eventfd's poll would wake it through the task_work of the
  // thread that submitted that poll, an earlier thread in the driver, which with COOP_TASKRUN runs
  // it only at its next entry into the kernel (a timer tick away if it computes). The eventfd stays
  // for when the no-op cannot be submitted, and when entries a submission left wait in the
  // queue (submitting them here would make this thread, maybe one outside the runtime,
  // their poll's owner). One no-op at a time: wakes that find one on its way add nothing
  // (the completion queue would fill with them). The waking thread gets an io_uring
  // context from the kernel, as a submitter does (docs/io.md: EINTR).
  void wake() noexcept override {
    // Release: pairs with wait's acquire exchange as it takes the no-op's completion. A waker
    // that finds true relies on the setter's no-op: the exchanges form one release sequence.
    if (wake_posted_.exchange(true, std::memory_order_release)) return;
    {
      std::lock_guard lock(sq_mutex_);
      io_uring_sqe* sqe = io_uring_sq_ready(&ring_) == 0 ? next_sqe_locked() : nullptr;
      if (sqe != nullptr) {
        io_uring_prep_nop(sqe);
        io_uring_sqe_set_data64(sqe, kWakeNop);
        if (submit_locked() >= 0 && io_uring_sq_ready(&ring_) == 0) return;
        announce_locked();  // left in the queue: the next wait submits it
      } else {
        // No no-op is on its way: the next wake tries again. Wakers that found true
        // meanwhile are carried by the eventfd below, a system call the wait
        // returns from (ordered by the kernel, not by this flag).
        wake_posted_.store(false, std::memory_order_relaxed);
      }
    }
    wake_.signal();
  }

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
      r = refuse_submissions_ && refuse_submissions_() ? -EAGAIN : io_uring_submit(&ring_);
    } while (r == -EINTR || (r == -EAGAIN && ++tries < 3));
    return r;
  }
  // `io`'s tag (see kGenerationShift), given at its first arm. Throws std::system_error
  // (naming `what`) for an address that leaves no room for the generation.
  std::uint64_t tag_locked(ScheduledIo* io, const char* what) {
    if (io->watch_tag == 0) {
      const auto address = reinterpret_cast<std::uint64_t>(io);
      if ((address & ~kAddressMask) != 0) {
        throw_errno(EFAULT, std::string(what) +
                                ": io_uring: a registration's address is wider than 48 bits");
      }
      io->watch_tag = address | std::uint64_t{next_generation_++} << kGenerationShift;
    }
    return io->watch_tag;
  }
  // The thread in the driver, before it waits: arms the wake poll if it is not, the polls handed
  // over to it and the removals that found no entry, and submits what earlier submissions left.
  // False if something is left still.
  bool submit_pending() {
    // Acquire: pairs with announce_locked's release.
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
    // runtime may hand over more polls than that). Not next_sqe_locked: no submission
    // before the round's own, whose failure takes back the polls the round armed.
    for (;;) {
      armed_.clear();
      io_uring_sqe* sqe = nullptr;
      while (!handed_over_.empty() && (sqe = io_uring_get_sqe(&ring_)) != nullptr) {
        ScheduledIo* io = handed_over_.back();
        armed_.push_back(sqe);  // within its reserve: at most the queue's entries
        io_uring_prep_poll_multishot(sqe, io->fd(), kPollMask);
        io_uring_sqe_set_data64(sqe, io->watch_tag);
        handed_over_.pop_back();
      }
      std::size_t removed = 0;
      while (!removals_.empty() && (sqe = io_uring_get_sqe(&ring_)) != nullptr) {
        prep_removal(sqe, removals_.back());  // may stay queued: its tag names only its poll
        removals_.pop_back();
        ++removed;
      }
      const int r = submit_locked();
      if (r < 0) {
        // The kernel took nothing: the polls go back to the hand-over list (where disarm
        // finds them), their entries become no-ops.
        for (io_uring_sqe* armed : armed_) {
          handed_over_.push_back(registration_of(armed->user_data));
          make_inert(armed);
        }
        return left_locked();
      }
      if (io_uring_sq_ready(&ring_) > 0) return left_locked();  // the kernel took part
      if (handed_over_.empty() && removals_.empty()) return true;
      if (armed_.empty() && removed == 0 && r == 0) return left_locked();  // not expected
    }
  }
  // Something is left to submit: the next wait tries again. Always false.
  bool left_locked() {
    announce_locked();
    return false;
  }
  // Tells the thread in the driver that something waits for its submission (see queued_).
  void announce_locked() noexcept { queued_.store(true, std::memory_order_release); }
  // Announces what is queued, lets sq_mutex_ go and wakes the thread in the driver (asleep
  // without a timeout, it would submit only at its next wake-up).
  void leave_to_thread_in_driver(std::unique_lock<std::mutex>& lock) noexcept {
    announce_locked();
    lock.unlock();
    wake();
  }
  // Turns an entry the kernel has not taken into a no-op whose completion names no
  // registration (wait ignores a kRemoval tag without an address).
  static void make_inert(io_uring_sqe* sqe) noexcept {
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, kRemoval);
  }
  // Makes a no-op of the entry that would arm `tag`'s poll if the kernel has not taken it yet
  // (a submission it took only part of left it in the queue). True if there was one. The
  // kernel reads entries only inside io_uring_enter, which every thread calls under
  // sq_mutex_, held here.
  bool cancel_unsubmitted_locked(std::uint64_t tag) noexcept {
    bool found = false;
    // Stable: the kernel moves it only inside an io_uring_enter that submits, which runs
    // under sq_mutex_ (the ring has no SQPOLL thread, which would move it any time).
    const unsigned head = *ring_.sq.khead;
    for (unsigned i = head; i != ring_.sq.sqe_tail; ++i) {
      io_uring_sqe* sqe = &ring_.sq.sqes[i & ring_.sq.ring_mask];
      if (sqe->opcode == IORING_OP_POLL_ADD && sqe->user_data == tag) {
        make_inert(sqe);
        found = true;
      }
    }
    return found;
  }
  // Submits the removal of the poll whose user_data is `tag` (its completion says whether it
  // worked; see wait). Never lost, since the poll holds its registration and the socket's
  // file (the peer would never see the close): if the kernel takes nothing now, the entry
  // stays in the submission queue, and if that queue is full of entries it refused, the
  // removal waits in removals_; the next wait submits either. A removal that
  // waited while its poll ended and the address was reused finds nothing: the tag's
  // generation is not the new poll's.
  void remove_async(std::uint64_t tag) noexcept {
    std::unique_lock lock(sq_mutex_);
    io_uring_sqe* sqe = next_sqe_locked();
    if (sqe == nullptr) {
      try {
        removals_.push_back(tag);  // allocates only past kEntries waiting removals
      } catch (const std::bad_alloc&) {
        fatal_misuse("out of memory queueing the removal of an io_uring poll");
      }
      leave_to_thread_in_driver(lock);
      return;
    }
    prep_removal(sqe, tag);
    if (submit_locked() < 0 || io_uring_sq_ready(&ring_) > 0) leave_to_thread_in_driver(lock);
  }
  static void prep_removal(io_uring_sqe* sqe, std::uint64_t tag) noexcept {
    io_uring_prep_poll_remove(sqe, tag);
    io_uring_sqe_set_data64(sqe, tag | kRemoval);
  }

  WakeEvent wake_;
  io_uring ring_{};
  bool sync_cancel_ = false;  // set by the constructor: IORING_REGISTER_SYNC_CANCEL works
  std::mutex sq_mutex_;       // the submission queue's (any thread that arms or disarms)
  // Wait's alone: the eventfd's poll is armed (by the first wait, and again
  // by the wait after it ended).
  bool wake_armed_ = false;
  // Registrations armed by threads that do not drive the runtime, for the next wait to submit
  // (guarded by sq_mutex_).
  std::vector<ScheduledIo*> handed_over_;
  // The tags of polls whose removal found the submission queue full of entries the kernel
  // refused, for the next wait to submit (guarded by sq_mutex_).
  std::vector<std::uint64_t> removals_;
  std::uint16_t next_generation_ = 0;               // guarded by sq_mutex_: tag_locked's
  const std::function<bool()> refuse_submissions_;  // see UringPollerOptions
  std::vector<io_uring_sqe*> armed_;                // submit_pending's, under sq_mutex_
  // True while something waits for the next wait's submission: entries the kernel refused or
  // did not take, handed_over_ polls, removals_. Stored (release, announce_locked) under sq_mutex_
  // by arm, wake, remove_async and submit_pending itself; exchanged (acquire) by whichever
  // thread holds the driver, before each wait, which then takes sq_mutex_. What it
  // announces is guarded by that mutex: the pair only makes sure that the flag, and so the
  // need to take the mutex, is seen.
  Atomic<bool> queued_{false};
  // True from a wake that posts a no-op until the thread in the driver takes its completion:
  // exchanged (release) by wake — only the one that finds it false submits — and (acquire, to
  // false) by wait, which pairs with it; stored false (relaxed) by a wake that could not post.
  Atomic<bool> wake_posted_{false};
  // This poller's identity for tl_waited_on (see next_poller_id).
  const std::uint64_t id_ = next_poller_id.fetch_add(1, std::memory_order_relaxed);
};

}  // namespace

std::unique_ptr<IoPoller> make_uring_poller(UringPollerOptions options) {
  return std::make_unique<UringPoller>(std::move(options));
}

void probe_uring() {
  io_uring ring{};
  setup(ring, 2, 0);
  io_uring_queue_exit(&ring);
}

}  // namespace spool::detail

#else  // !SPOOL_HAVE_LIBURING

namespace spool::detail {

std::unique_ptr<IoPoller> make_uring_poller(UringPollerOptions) {
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
