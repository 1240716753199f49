// ThreadRing (thread_ring.hpp).
#include "driver/io/thread_ring.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <system_error>

#include "driver/io/io_driver.hpp"

namespace spool::detail {

constinit thread_local ThreadRing* this_thread_ring = nullptr;

ThreadRing::~ThreadRing() {
  ring_.reset();
  if (watch_ != nullptr) io_.remove(watch_);
  if (watch_fd_ >= 0) ::close(watch_fd_);
}

WorkerRing* ThreadRing::ring() {
  if (ring_ != nullptr || refused_) return ring_.get();
  try {
    auto ring = std::make_unique<WorkerRing>();
    const int fd = ::fcntl(ring->event_fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) throw std::system_error(errno, std::system_category(), "dup of a ring's eventfd");
    try {
      watch_ = io_.add(fd, "spool: watching a worker's io_uring");
    } catch (...) {
      ::close(fd);
      throw;
    }
    watch_fd_ = fd;
    ring_ = std::move(ring);
  } catch (const std::system_error&) {
    refused_ = true;  // (a seccomp filter, a kernel without io_uring, no memory for a ring)
  }
  return ring_.get();
}

bool ThreadRing::arm(const Waker& unpark) {
  // Entries the kernel has not taken yet (it refused them for want of memory) would never
  // complete while the thread sleeps: it reaps (and submits) again instead.
  if (ring_->has_unsubmitted()) return false;
  Context cx(unpark);
  for (;;) {
    const Poll<ReadyEvent> r = watch_->poll_ready(cx, ScheduledIo::kReadMask, waiter_);
    if (r.is_pending()) return true;
    // Shut down, or no longer watched: nothing will wake the park for the ring, so the
    // thread reaps instead (its loop then sees the shutdown).
    if ((r.value().bits & (ScheduledIo::kShutdown | ScheduledIo::kFailed)) != 0) return false;
    std::uint64_t count;
    if (::read(watch_fd_, &count, sizeof count) == sizeof count) return false;
    watch_->clear_readiness(r.value(), ScheduledIo::kReadable);  // EAGAIN: wait for an edge
  }
}

}  // namespace spool::detail
