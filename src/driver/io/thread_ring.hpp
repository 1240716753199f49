// ThreadRing: a runtime thread's own WorkerRing, made by the first operation that asks for it
// (a runtime that never reads a file pays nothing), and watched by the runtime's I/O driver
// while its thread parks, so that a completion wakes it. The scheduler only opens the scope
// and calls the free functions below; the driver arms the watch in its parks. docs/fs.md,
// "The ring path".
#pragma once

#include <memory>

#include "driver/io/worker_ring.hpp"
#include "spool/detail/io_waiter.hpp"

namespace spool::detail {

class IoDriver;
class ScheduledIo;
class ThreadParker;

class ThreadRing {
 public:
  // For a thread of a runtime whose I/O driver, `io`, runs on io_uring.
  explicit ThreadRing(IoDriver& io) noexcept : io_(io) {}
  ~ThreadRing() { end(); }
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;

  // The ring, made now if it was not; null when the kernel refused it (then for good: the
  // caller takes another path).
  WorkerRing* ring();
  // Operations are in flight (or queued).
  bool busy() const noexcept { return ring_ != nullptr && ring_->in_flight() > 0; }
  WorkerRing& made() noexcept { return *ring_; }  // (busy() was true)
  // Before a park while busy(): true if the thread may sleep (the driver then unparks `own`
  // at the next completion); false if completions already wait, or entries wait for a
  // submission (after_park() reaps them).
  bool arm(ThreadParker& own);
  // After the park (or instead of it): the watch goes off, and what came is delivered.
  void after_park() noexcept;
  // Cancels and waits for what is in flight, then drops the watch; a later operation makes
  // a new ring. On the thread that made the ring.
  void end() noexcept;

 private:
  bool register_watch();  // false (the ring ended) when the driver refuses it

  IoDriver& io_;
  std::unique_ptr<WorkerRing> ring_;
  bool refused_ = false;
  int watch_fd_ = -1;             // a duplicate of the ring's eventfd, registered with io_
  ScheduledIo* watch_ = nullptr;  // its registration (made at the first park that needs it)
  IoWaiter waiter_;               // this thread's wait on it
};

// The ring host of the runtime thread running here (set by ThreadRingScope); null
// elsewhere: a thread without one takes the blocking path.
extern constinit thread_local ThreadRing* this_thread_ring;

// A worker thread's ring host for the length of its loop: one if `io` runs on io_uring,
// none else. Ending it (the thread leaves) cancels and waits for what is in flight.
class ThreadRingScope {
 public:
  explicit ThreadRingScope(IoDriver& io);
  ~ThreadRingScope();
  ThreadRingScope(const ThreadRingScope&) = delete;
  ThreadRingScope& operator=(const ThreadRingScope&) = delete;

 private:
  std::unique_ptr<ThreadRing> ring_;
  ThreadRing* saved_;
};

// The calls a worker makes; each is a thread-local load where the thread has no ring.
void submit_queued(ThreadRing& r) noexcept;  // (submit_this_thread_ring's rare part)
// After a task's poll: hands what the poll queued urgently (a file's operation) to the
// kernel; a socket's entries wait for the next reap. Inline: it runs after every poll, and
// costs a load and a branch unless operations are in flight.
inline void submit_this_thread_ring() noexcept {
  if (ThreadRing* r = this_thread_ring; r != nullptr && r->busy()) [[unlikely]] {
    submit_queued(*r);
  }
}
// Between tasks: delivers what has come (its tasks wake here); true if it delivered any.
bool reap_this_thread_ring() noexcept;
// Before a blocking section (block_in_place): nothing may wait on this thread's ring while
// it blocks, so the ring ends; its cancelled operations run again on the pool.
void end_this_thread_ring() noexcept;

}  // namespace spool::detail
