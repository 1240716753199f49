// ThreadRing: a runtime thread's own WorkerRing, made by the first operation that asks for it
// (a runtime that never reads a file pays nothing), and watched by the runtime's I/O driver
// while its thread parks, so that a completion wakes it. docs/fs.md, "The ring path".
#pragma once

#include <memory>

#include "driver/io/worker_ring.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/io_waiter.hpp"

namespace spool::detail {

class IoDriver;
class ScheduledIo;

class ThreadRing {
 public:
  // For a thread of a runtime whose I/O driver, `io`, runs on io_uring.
  explicit ThreadRing(IoDriver& io) noexcept : io_(io) {}
  // Cancels and waits for what is in flight (WorkerRing), then unregisters the watch. On
  // the thread that made the ring.
  ~ThreadRing();
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;

  // The ring, made now if it was not; null when the kernel refused it (then for good: the
  // caller takes another path).
  WorkerRing* ring();
  // True while operations are in flight: the thread reaps before it looks for other work,
  // and arms the watch before it parks.
  bool busy() const noexcept { return ring_ != nullptr && ring_->in_flight() > 0; }
  WorkerRing& made() noexcept { return *ring_; }  // (busy() was true)
  // Before a park while busy(): true if the thread may park (the driver wakes `unpark` at
  // the next completion); false if completions already wait (reap them instead).
  bool arm(const Waker& unpark);

 private:
  IoDriver& io_;
  std::unique_ptr<WorkerRing> ring_;
  bool refused_ = false;
  int watch_fd_ = -1;             // a duplicate of the ring's eventfd, registered with io_
  ScheduledIo* watch_ = nullptr;  // its registration
  IoWaiter waiter_;               // this thread's wait on it
};

// The ring host of the runtime thread running here (set by a worker for the length of its
// loop); null elsewhere: a thread without one takes the blocking path.
extern constinit thread_local ThreadRing* this_thread_ring;

}  // namespace spool::detail
