// WorkerRing: one thread's own io_uring for operations that complete (a file's read, write,
// fsync, open, statx...), beside the shared driver, which watches readiness. The thread that
// makes it is its only submitter and reaper: no lock, and with SINGLE_ISSUER|DEFER_TASKRUN a
// completion's kernel work runs only when that thread reaps, never by interrupting it.
// docs/fs.md, "The ring path".
#pragma once

#include <pthread.h>

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/detail/atomic.hpp"

struct io_uring;
struct io_uring_sqe;

namespace spool::detail {

class WorkerRing;

// One operation handed to a WorkerRing. Whatever the kernel reads or writes lives in the
// operation (a derived class owns its buffers), so the waiter may give up at any time: the
// ring and the waiter share it, and the second of the two to finish frees it.
class RingOp {
 public:
  RingOp() = default;
  virtual ~RingOp() = default;
  RingOp(const RingOp&) = delete;
  RingOp& operator=(const RingOp&) = delete;

  // The waiter, on any thread: the result (>= 0, or -errno) once the kernel has answered,
  // else empty with cx's waker registered for the answer.
  std::optional<int> poll_result(Context& cx);
  // The result if the kernel has answered (acquire, as poll_result), registering nothing.
  std::optional<int> result_if_done() const noexcept {
    if ((state_.load(std::memory_order_acquire) & kDone) == 0) return std::nullopt;
    return result_;
  }
  // The waiter gives the operation up: frees it if it is complete, else the ring frees it
  // when its completion (or its cancellation's) arrives.
  void abandon() noexcept;
  // As abandon(), from any thread, and the kernel is asked to stop it: an operation that may
  // wait for ever (a socket's send) must not keep its file open. The cancel goes to the ring
  // at once on its own thread (queued and retried while the submission queue is full), else
  // through the ring's inbox, which its thread empties at its next reap.
  void cancel() noexcept;

 protected:
  // For a derived destructor: whether the kernel answered, and its answer (a descriptor
  // that nobody took must be closed).
  bool completed() const noexcept { return completed_; }
  int result() const noexcept { return result_; }
  // The last reference's end (the ring's and the waiter's both dropped): frees it. A derived
  // class that keeps its operations for reuse (a socket's, whose buffer stays with the
  // socket) keeps it instead, and rearm()s it before its next push.
  virtual void released() noexcept { delete this; }
  // As new again, for an operation whose last reference ended (released()).
  void rearm() noexcept;

 private:
  friend class WorkerRing;
  void complete(int result) noexcept;  // the ring's thread

  void release() noexcept;  // drops one of the two references; the last frees

  // Two references, the ring's and the waiter's (kRef each), and kDone. complete() sets
  // kDone (release; poll_result's acquire load pairs with it, to read result_), wakes, then
  // drops the ring's reference; abandon() takes the waker, then drops the waiter's. The
  // drops are acq_rel: whoever drops the last frees, after the other's writes and reads.
  static constexpr std::uint32_t kDone = 1;
  static constexpr std::uint32_t kRef = 2;
  Atomic<std::uint32_t> state_{2 * kRef};
  int result_ = 0;          // written by complete() before its exchange
  bool completed_ = false;  // likewise
  AtomicWaker waker_;
  RingOp* prev_ = nullptr;  // the ring's in-flight list (its thread only)
  RingOp* next_ = nullptr;
  WorkerRing* ring_ = nullptr;     // the ring it was pushed to (set by push, then constant)
  RingOp* cancel_next_ = nullptr;  // in a ring's list of cancels to send (see cancel())
};

// A thread's ring. Every member, the destructor included, is for the thread that made it,
// except event_fd().
class WorkerRing {
 public:
  // How the kernel runs completions' work (Builder metrics report it).
  enum class Mode : std::uint8_t {
    kDeferTaskrun,  // SINGLE_ISSUER|DEFER_TASKRUN (Linux 6.1): only when reap() asks
    kCoopTaskrun,   // COOP_TASKRUN (5.19): at the thread's next entry into the kernel
    kPlain,         // by interrupting the thread (older kernels)
  };

  // Sets the ring up for this thread; throws std::system_error when the kernel refuses
  // io_uring (or spool was built without liburing).
  explicit WorkerRing(unsigned entries = 256);
  // Cancels what is in flight and waits for every completion, so that no operation's
  // memory is freed while the kernel may still write it.
  ~WorkerRing();
  WorkerRing(const WorkerRing&) = delete;
  WorkerRing& operator=(const WorkerRing&) = delete;

  Mode mode() const noexcept { return mode_; }
  // True if this kernel knows the io_uring operation `opcode` (IORING_OP_*).
  bool supports(unsigned opcode) const noexcept {
    return opcode < supported_.size() && supported_[opcode];
  }
  // Queues `op` with the entry `prep` fills in. False (op untouched) when the submission
  // queue stays full after a submit(): the caller takes another path.
  // The entry is urgent: the worker submits it right after the poll that pushed it (a file's
  // operation, which may take long in the kernel).
  template <class Prep>
  bool push(RingOp* op, Prep&& prep) {
    if (!push_batched(op, std::forward<Prep>(prep))) return false;
    urgent_ = true;
    return true;
  }
  // As push, but the entry may wait for the thread's next reap (when its queue of tasks is
  // empty, or its maintenance): a socket's send or receive, many of which then go to the
  // kernel in one system call, as W10's floor sends them.
  template <class Prep>
  bool push_batched(RingOp* op, Prep&& prep) {
    io_uring_sqe* sqe = next_sqe();
    if (sqe == nullptr) return false;
    prep(sqe);
    track(op, sqe);
    return true;
  }
  // Hands the queued entries (and cancels) to the kernel (one system call for all of them);
  // false when it took none now (they stay queued: the next submit or reap tries again).
  bool submit() noexcept;
  // True while an urgent entry (push) waits for submit().
  bool has_urgent() const noexcept { return urgent_; }
  // True if a completion may wait for reap() (two loads, no system call).
  bool may_have_completions() const noexcept;
  // Submits what is queued and delivers every completion that has arrived (wakes its
  // waiter, or frees an abandoned operation); the count.
  std::size_t reap() noexcept;
  // Whether event_fd() is signalled for completions (off until a watch wants it).
  void watch(bool on) noexcept;
  // Reads event_fd() back to unreadable.
  void drain_event() noexcept;
  // Operations pushed and not yet reaped.
  std::size_t in_flight() const noexcept { return in_flight_; }
  // True while pushed entries or cancels wait for a submission the kernel refused so far,
  // or another thread's cancels wait in the inbox (the next reap takes them).
  bool has_unsubmitted() const noexcept;
  // Readable once a completion waits for reap() while watch(true) (an eventfd registered
  // with the ring), so that another thread's wait can watch the ring for this one.
  int event_fd() const noexcept { return event_fd_; }

 private:
  io_uring_sqe* next_sqe();
  void track(RingOp* op, io_uring_sqe* sqe) noexcept;
  void link(RingOp* op) noexcept;  // into the in-flight list
  void unlink(RingOp* op) noexcept;
  std::size_t deliver() noexcept;  // the completions already in the queue
  void cancel_all_and_wait() noexcept;
  friend class RingOp;
  // A cancel of `op`, whose waiter's reference it takes; from any thread.
  void request_cancel(RingOp* op) noexcept;
  // On the ring's thread: an entry that cancels `op` (then drops the reference the request
  // took), or, the submission queue full, the request waits in cancels_.
  void queue_cancel(RingOp* op) noexcept;
  void flush_cancels() noexcept;  // cancels_ into the submission queue, while it has room
  void take_inbox() noexcept;     // the other threads' requests, queued here
  static void release_requests(RingOp* list) noexcept;  // drops each request's reference
  bool inbox_waits() const noexcept { return inbox_waits_.load(std::memory_order_relaxed); }

  std::unique_ptr<io_uring> ring_;
  Mode mode_ = Mode::kPlain;
  std::bitset<256> supported_;  // by opcode, as the kernel's probe says
  int event_fd_ = -1;
  RingOp* in_flight_list_ = nullptr;
  std::size_t in_flight_ = 0;
  bool urgent_ = false;        // see has_urgent
  pthread_t owner_;            // the thread that made it (request_cancel compares)
  RingOp* cancels_ = nullptr;  // cancels waiting for room in the submission queue
  // Other threads' cancel requests, guarded by a lock common to every ring (taken only by
  // such a request and by the destructor, so that a request never reaches a destroyed
  // ring: see request_cancel).
  RingOp* inbox_ = nullptr;
  // Set (release, under that lock) by a request, after linking its operation; cleared by
  // take_inbox under the lock. The owner's relaxed load is a hint: take_inbox reads the
  // list under the lock, which orders it after the request.
  Atomic<bool> inbox_waits_{false};
};

}  // namespace spool::detail
