// ThreadRing (thread_ring.hpp).
#include "driver/io/thread_ring.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <system_error>

#include "driver/io/io_driver.hpp"
#include "driver/thread_parker.hpp"

namespace spool::detail {

constinit thread_local ThreadRing* this_thread_ring = nullptr;

namespace {

// Unparks a thread's parker: what the I/O driver wakes when the thread's ring has a
// completion. The parker (a worker's) outlives the watch, which its thread removes.
constexpr WakerVTable kUnparkVTable{
    [](const void* parker) {
      return RawWaker{parker, &kUnparkVTable};
    },
    [](const void* parker) { static_cast<ThreadParker*>(const_cast<void*>(parker))->unpark(); },
    [](const void* parker) { static_cast<ThreadParker*>(const_cast<void*>(parker))->unpark(); },
    [](const void*) {},
};

}  // namespace

WorkerRing* ThreadRing::ring() {
  if (ring_ != nullptr || refused_) return ring_.get();
  try {
    ring_ = std::make_unique<WorkerRing>();
    io_.count_worker_ring(ring_->mode() == WorkerRing::Mode::kDeferTaskrun);
  } catch (const std::system_error&) {
    refused_ = true;  // (a seccomp filter, a kernel without io_uring, no memory for a ring)
    io_.count_worker_ring_refused();
  }
  return ring_.get();
}

bool ThreadRing::register_watch() {
  try {
    const int fd = ::fcntl(ring_->event_fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "dup");
    try {
      watch_ = io_.add(fd, "spool: watching a worker's io_uring");
    } catch (...) {
      ::close(fd);
      throw;
    }
    watch_fd_ = fd;
    io_.count_ring_watch(true);
    return true;
  } catch (const std::system_error&) {
    // Nothing could wake this thread for its ring while it sleeps: the ring ends, its
    // operations run again on the pool, and this thread makes no other.
    end();
    refused_ = true;
    io_.count_worker_ring_refused();
    return false;
  }
}

bool ThreadRing::arm(ThreadParker& own) {
  if (ring_->has_unsubmitted()) return false;
  // A refused watch ended the ring: the tasks its cancels woke wait in this thread's queue,
  // which the scheduler looks at again before it sleeps.
  if (watch_ == nullptr && !register_watch()) return false;
  ring_->drain_event();
  // Another thread's cancel signals the eventfd after its request is in the inbox: one
  // whose signal the drain took is seen here.
  if (ring_->has_unsubmitted()) return false;
  ring_->watch(true);  // then the checks below: what came before it signals nothing
  const Waker unpark = Waker::from_raw(RawWaker{&own, &kUnparkVTable});
  Context cx(unpark);
  for (;;) {
    const Poll<ReadyEvent> r = watch_->poll_ready(cx, ScheduledIo::kReadMask, waiter_);
    if (r.is_pending()) return !ring_->may_have_completions();
    const std::uint32_t bits = r.value().bits;
    if ((bits & (ScheduledIo::kShutdown | ScheduledIo::kFailed)) != 0) {
      // The driver no longer watches it: the runtime shuts down (its loop ends), or the
      // kernel stopped the watch (then the ring ends, as a refused watch does).
      if ((bits & ScheduledIo::kFailed) != 0) {
        end();
        refused_ = true;
        return false;  // (as a refused watch: the queue first)
      }
      return false;
    }
    std::uint64_t count;
    if (::read(watch_fd_, &count, sizeof count) == sizeof count) return false;
    watch_->clear_readiness(r.value(), bits);  // EAGAIN: wait for the next edge
  }
}

void ThreadRing::after_park() noexcept {
  if (ring_ == nullptr) return;  // (arm ended it)
  ring_->watch(false);
  (void)ring_->reap();
}

void ThreadRing::end() noexcept {
  ring_.reset();  // cancels and waits (WorkerRing's destructor)
  if (watch_ != nullptr) {
    io_.count_ring_watch(false);
    io_.remove(std::exchange(watch_, nullptr), nullptr);  // its waker: the ring's own
  }
  if (watch_fd_ >= 0) ::close(std::exchange(watch_fd_, -1));
}

ThreadRingScope::ThreadRingScope(IoDriver& io)
    : ring_(io.backend() == IoBackend::kIoUring ? std::make_unique<ThreadRing>(io) : nullptr),
      saved_(std::exchange(this_thread_ring, ring_.get())) {}

ThreadRingScope::~ThreadRingScope() {
  ring_.reset();  // while this thread is still the worker: the cancelled tasks' wakes queue here
  this_thread_ring = saved_;
}

void submit_queued(ThreadRing& r) noexcept {
  // Only a file's operation goes at once; sockets' entries wait for the next reap, when this
  // worker's queue is empty, to go to the kernel together.
  if (r.made().has_urgent()) (void)r.made().submit();
}

bool reap_this_thread_ring() noexcept {
  ThreadRing* r = this_thread_ring;
  if (r == nullptr || !r->busy()) return false;
  WorkerRing& ring = r->made();
  return (ring.has_unsubmitted() || ring.may_have_completions()) && ring.reap() > 0;
}

void end_this_thread_ring() noexcept {
  if (ThreadRing* r = this_thread_ring) r->end();
}

}  // namespace spool::detail
