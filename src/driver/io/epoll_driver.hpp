// EpollDriver: the I/O layer of the driver stack on Linux epoll (edge-triggered, one
// registration per file descriptor, an eventfd to unpark).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <sys/epoll.h>

#include "driver/io/scheduled_io.hpp"
#include "driver/park.hpp"
#include "driver/thread_parker.hpp"

namespace spool::detail {

// The counters of an I/O driver (cumulative, except `registered`).
struct IoCounters {
  std::uint64_t events = 0;           // readiness events dispatched to registrations
  std::uint64_t accept_backoffs = 0;  // accepts that waited because the process had no fd left
  std::size_t registered = 0;         // file descriptors registered now
};

// The I/O layer. It sits between the time driver and the thread parker, and stays out of
// the way until a file descriptor is registered: until then park and unpark go to the
// thread parker below (a runtime that never opens a socket pays nothing, not even the
// epoll and event fds). The first registration creates them, switches the layer on for
// good, and unparks the parker so that a holder parked there comes back and parks in
// epoll_wait instead.
//
// park(timeout) is called by the driver's holder only (driver/driver.hpp): it frees the
// registrations released since the last park, waits in epoll_wait, and dispatches each event
// to its ScheduledIo (which wakes the waiting tasks). unpark() writes the eventfd. add,
// remove and shutdown may be called by any thread.
//
// Lifetime of a registration: remove() deletes the fd from the epoll set, then queues the
// ScheduledIo; the holder frees the queue at the start of its next park, before it waits.
// An epoll_wait that began before the removal may still return the registration, but the
// holder dispatches it before it frees anything, and no wait after the free can return it.
class EpollDriver final : public Park {
 public:
  explicit EpollDriver(std::shared_ptr<ThreadParker> idle);
  ~EpollDriver() override;
  EpollDriver(const EpollDriver&) = delete;
  EpollDriver& operator=(const EpollDriver&) = delete;

  // --- Park (the holder) ---
  void park(std::optional<std::chrono::nanoseconds> timeout) override;
  void unpark() noexcept override;

  // --- Registrations (any thread) ---
  // Registers `fd` (non-blocking) for read and write edges. Throws std::system_error when
  // epoll refuses it, or when the driver has shut down (`what` names the operation).
  ScheduledIo* add(int fd, const char* what);
  // Unregisters and queues `io` to be freed; the caller closes the fd afterwards.
  void remove(ScheduledIo* io) noexcept;
  // Marks every registration shut down (their tasks wake and see it) and refuses later adds.
  void shutdown();

  // True once a file descriptor was registered (the layer parks in epoll from then on).
  bool active() const noexcept { return active_.load(std::memory_order_acquire); }
  void count_accept_backoff() noexcept { accept_backoffs_.fetch_add(1, std::memory_order_relaxed); }
  IoCounters counters() const;

 private:
  void activate_locked();  // creates the fds (under mutex_); throws std::system_error
  void free_released();
  // epoll_pwait2 (nanosecond timeouts), or epoll_wait where the kernel lacks it: the number
  // of events, or -1 for EINTR. Any other failure is a bug: fatal.
  int wait(const timespec* timeout);
  void dispatch(int n);

  const std::shared_ptr<ThreadParker> idle_;
  // Created once by activate_locked (under mutex_) before active_'s release store; read by
  // the holder and unpark after an acquire load of active_ that saw true.
  int epoll_fd_ = -1;
  int event_fd_ = -1;
  // False until the first registration; then true for good. Stored (release) under mutex_
  // after the fds exist, then the idle parker is unparked; loaded (acquire) by park — which
  // parks in the idle parker while it reads false — and by unpark, which then writes the
  // eventfd. unpark unparks the idle parker too, whatever it read: a holder that read false
  // just before the switch parks there, and the token brings it back to epoll_wait.
  Atomic<bool> active_{false};
  mutable std::mutex mutex_;
  ScheduledIo* registry_ = nullptr;     // guarded by mutex_: live registrations
  std::size_t registered_ = 0;          // guarded by mutex_
  std::vector<ScheduledIo*> released_;  // guarded by mutex_: removed, not yet freed
  bool shut_down_ = false;              // guarded by mutex_
  // Set (release) by remove after it queued a registration; exchanged (acquire) by the holder
  // before it takes the queue, so parks without removals do not take the mutex.
  Atomic<bool> has_released_{false};
  // Registrations made so far: fetch_add (release) by add after it built the ScheduledIo and
  // before its epoll_ctl; loaded (acquire) by the holder after each epoll_wait that returned
  // events, before it touches them. The hand-over itself is ordered by the kernel (an fd's
  // epoll_ctl happens before any wait that reports it); the C++ model alone would not make
  // the holder's load see the increment, but a thread sanitizer sees the value the load
  // read, so this pair makes the hand-over visible to it (for one load per wait).
  Atomic<std::uint64_t> adds_{0};
  // Written by the holder only (relaxed increments); read by counters().
  Atomic<std::uint64_t> events_{0};
  // Incremented (relaxed) by accept futures that back off; read by counters().
  Atomic<std::uint64_t> accept_backoffs_{0};
  std::vector<epoll_event> events_buffer_;  // the holder's (park)
  bool use_pwait2_ = true;                  // the holder's: false once the kernel said ENOSYS
};

}  // namespace spool::detail
