// IoDriver: the I/O layer of the driver stack — registrations, and parking in the kernel
// interface chosen for the runtime (epoll or io_uring, an IoPoller).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "driver/io/io_poller.hpp"
#include "driver/io/scheduled_io.hpp"
#include "driver/io/work_request.hpp"
#include "driver/park.hpp"
#include "driver/thread_parker.hpp"
#include "spool/io_backend.hpp"

namespace spool::detail {

// The counters of an I/O driver (cumulative, except `registered`).
struct IoCounters {
  std::uint64_t events = 0;           // readiness events dispatched to registrations
  std::uint64_t accept_backoffs = 0;  // accepts that waited because the process had no fd left
  std::size_t registered = 0;         // file descriptors registered now
  std::uint64_t rearms = 0;           // watches the kernel ended on its own, armed again
  std::uint64_t worker_rings = 0;     // threads' own rings made (thread_ring.hpp)
  std::uint64_t worker_rings_deferred = 0;  // of which with SINGLE_ISSUER|DEFER_TASKRUN
  std::uint64_t worker_rings_refused = 0;   // rings, or their watches, the kernel refused
};

// kEpoll or kIoUring for `requested` (kAuto: io_uring where it can be set up); without a
// request, SPOOL_IO_BACKEND ("epoll", "io_uring", "auto") decides, else kEpoll. Throws
// std::system_error when io_uring is asked for and cannot run, std::invalid_argument for a
// bad SPOOL_IO_BACKEND.
IoBackend resolve_io_backend(std::optional<IoBackend> requested);

// The I/O layer, between the time driver and the thread parker. Until the first fd is
// registered, park and unpark go to the parker below: a runtime without sockets pays
// nothing. The first registration makes the poller, switches the layer on for good and
// unparks the parker, so the thread in the driver parks in the poller from then on.
// park() is called by the thread in the driver only; the rest by any thread.
//
// A removed registration is freed at the start of the next park when no later wait can
// return it (epoll; io_uring: a poll the kernel never took), else when the poller reports
// its last event (io_uring: the kernel holds its address until the removal completes).
class IoDriver final : public Park {
 public:
  // Makes the poller when the first fd is registered (a test passes a fake one).
  using PollerFactory = std::function<std::unique_ptr<IoPoller>()>;
  // `backend` is kEpoll or kIoUring (resolve_io_backend's result); without `make`, the
  // driver makes that backend's poller.
  IoDriver(std::shared_ptr<ThreadParker> idle, IoBackend backend, PollerFactory make = {});
  ~IoDriver() override;
  IoDriver(const IoDriver&) = delete;
  IoDriver& operator=(const IoDriver&) = delete;

  // --- Park (the thread in the driver) ---
  void park(std::optional<std::chrono::nanoseconds> timeout) override;
  void unpark() noexcept override;

  // --- Registrations (any thread) ---
  // Registers `fd` (non-blocking) for read and write edges. Throws std::system_error when
  // the poller refuses it (or cannot be created), or when the driver has shut down (`what` names
  // the operation). `refuse_duplicate`: also EEXIST when `fd` is registered already (epoll
  // refuses that itself, io_uring would watch it twice); a walk of the registrations, so
  // only for descriptors a user hands over (AsyncFd), not for the sockets spool opens.
  ScheduledIo* add(int fd, const char* what, bool refuse_duplicate = false);
  // Throws add's EEXIST when `fd` is registered already: a descriptor handed over (a
  // socket's or a pipe end's from_fd) that a spool object of this driver owns, which a
  // refusal must not close. A walk of the registrations, as add's refuse_duplicate.
  void refuse_registered(int fd, const char* what) const;
  // Unregisters `io` (freed once no wait can report it: see the class comment); the caller
  // closes the fd afterwards. The wakers of the waits on it go to `woken` (see
  // ScheduledIo::detach_waiters), or are dropped when it is null.
  void remove(ScheduledIo* io, std::vector<Waker>* woken) noexcept;
  // Marks every registration shut down (their tasks wake and see it) and refuses later adds.
  void shutdown();

  // --- Work after the wait (the signal pump: net/signal_pump.hpp) ---
  // A park runs `work` after its wait if request_after_wait_work was called since the last
  // run began. Set once, before the first request.
  void set_after_wait_work(std::function<void()> work);
  // Any thread: sets the request and wakes the thread in the driver. Never runs the work
  // itself, so a Waker's wake may call it (a wake only schedules).
  void request_after_wait_work() noexcept;

  // True once a file descriptor was registered (the layer parks in the poller from then on).
  bool active() const noexcept { return active_.load(std::memory_order_acquire); }
  void count_accept_backoff() noexcept { accept_backoffs_.fetch_add(1, std::memory_order_relaxed); }
  // A thread made its own ring (`deferred`: with DEFER_TASKRUN), or was refused one.
  void count_worker_ring(bool deferred) noexcept {
    worker_rings_.fetch_add(1, std::memory_order_relaxed);
    if (deferred) worker_rings_deferred_.fetch_add(1, std::memory_order_relaxed);
  }
  void count_worker_ring_refused() noexcept {
    worker_rings_refused_.fetch_add(1, std::memory_order_relaxed);
  }
  // A thread's ring watch was registered (`added`) or is about to be removed: not a socket,
  // so `registered` leaves it out (a worker whose sockets are on its ring keeps one).
  void count_ring_watch(bool added) noexcept;
  IoCounters counters() const;
  IoBackend backend() const noexcept { return backend_; }

 private:
  void activate_locked();  // creates the poller (under mutex_); throws std::system_error
  void refuse_registered_locked(int fd, const char* what) const;  // (under mutex_)
  void free_released();
  void dispatch();
  void finish(ScheduledIo* io, int error) noexcept;  // the poller's last event for `io`
  void run_after_wait_work() noexcept;  // if it was asked for (a throw would end the process)

  const std::shared_ptr<ThreadParker> idle_;
  const IoBackend backend_;
  const PollerFactory make_poller_;
  // Made once under mutex_ before active_'s release store; used after an acquire load of it.
  std::unique_ptr<IoPoller> poller_;
  // Stored true (release) under mutex_ once the poller exists, then idle_ is unparked;
  // loaded (acquire) by park and unpark. unpark also unparks idle_ whatever it read: a park
  // that read false just before the switch is brought back to the poller.
  Atomic<bool> active_{false};
  mutable std::mutex mutex_;
  ScheduledIo* registry_ = nullptr;     // guarded by mutex_: live registrations
  ScheduledIo* releasing_ = nullptr;    // guarded by mutex_: released, awaiting their last event
  std::size_t registered_ = 0;          // guarded by mutex_
  std::size_t ring_watches_ = 0;        // of those, threads' ring watches; guarded by mutex_
  std::uint64_t rearms_ = 0;            // guarded by mutex_
  std::vector<ScheduledIo*> released_;  // guarded by mutex_: removed, not yet freed
  bool shut_down_ = false;              // guarded by mutex_
  // Set (release) by remove after it queued one; exchanged (acquire) by park before it takes
  // the queue: parks without removals skip the mutex.
  Atomic<bool> has_released_{false};
  // fetch_add (release) by add after it built the ScheduledIo, before it arms the poller;
  // loaded (acquire) by park after a wait with events. The kernel already orders an arm
  // before the wait that reports it; this pair shows that order to the thread sanitizer.
  Atomic<std::uint64_t> adds_{0};
  // Relaxed increments by the thread in the driver; read by counters().
  Atomic<std::uint64_t> events_{0};
  // Incremented (relaxed) by accept futures that back off; read by counters().
  Atomic<std::uint64_t> accept_backoffs_{0};
  // Incremented (relaxed) by the threads that make (or are refused) their own rings; read by
  // counters(). Counts: they order nothing.
  Atomic<std::uint64_t> worker_rings_{0};
  Atomic<std::uint64_t> worker_rings_deferred_{0};
  Atomic<std::uint64_t> worker_rings_refused_{0};
  std::vector<IoEvent> ready_;             // park's
  std::function<void()> after_wait_work_;  // set once by set_after_wait_work; run by park
  WorkRequest after_wait_work_requested_;  // set by any thread, taken by park
};

}  // namespace spool::detail
