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
};

// The backend a runtime asked for, made concrete: kAuto becomes kIoUring where io_uring can
// be set up (probe_uring), else kEpoll. Without a request, the SPOOL_IO_BACKEND
// environment variable ("epoll", "io_uring" or "auto") decides, else kEpoll. Throws
// std::system_error when kIoUring is asked for and cannot run here, std::invalid_argument
// for a bad SPOOL_IO_BACKEND.
IoBackend resolve_io_backend(std::optional<IoBackend> requested);

// The I/O layer. It sits between the time driver and the thread parker, and stays out of
// the way until a file descriptor is registered: until then park and unpark go to the
// thread parker below (a runtime that never opens a socket pays nothing, not even the
// poller's file descriptors). The first registration creates the poller, switches the layer
// on for good, and unparks the parker so that a holder parked there comes back and parks in
// the poller instead.
//
// park(timeout) is called by the driver's holder only (driver/driver.hpp): it frees the
// registrations released since the last park, waits in the poller, dispatches each event
// to its ScheduledIo (which wakes the waiting tasks), and runs the holder's work if it was
// asked for (set_holder_work). unpark() wakes the poller. add, remove, shutdown and
// request_holder_work may be called by any thread.
//
// Lifetime of a registration: remove() disarms it in the poller, then either queues it to be
// freed at the start of the holder's next park (epoll: no wait after that can return it;
// io_uring: a poll the kernel never took), or marks it released and keeps it until the
// poller reports its last event (io_uring: the kernel still holds its address until the
// removal completes).
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

  // --- Park (the holder) ---
  void park(std::optional<std::chrono::nanoseconds> timeout) override;
  void unpark() noexcept override;

  // --- Registrations (any thread) ---
  // Registers `fd` (non-blocking) for read and write edges. Throws std::system_error when
  // the poller refuses it (or cannot be created), or when the driver has shut down (`what` names
  // the operation).
  ScheduledIo* add(int fd, const char* what);
  // Unregisters `io` (freed once no wait can report it: see the class comment); the caller
  // closes the fd afterwards.
  void remove(ScheduledIo* io) noexcept;
  // Marks every registration shut down (their tasks wake and see it) and refuses later adds.
  void shutdown();

  // --- Work of the holder's own (the signal pump: net/signal_pump.hpp) ---
  // Makes `work` the holder's: each park runs it, after its wait, if request_holder_work
  // was called since the run before began. Set once, before the first request.
  void set_holder_work(std::function<void()> work);
  // Asks the holder to run its work (any thread): sets a flag and wakes the holder. Never
  // runs the work itself, so a Waker's wake may call it (a wake only schedules).
  void request_holder_work() noexcept;

  // True once a file descriptor was registered (the layer parks in the poller from then on).
  bool active() const noexcept { return active_.load(std::memory_order_acquire); }
  void count_accept_backoff() noexcept { accept_backoffs_.fetch_add(1, std::memory_order_relaxed); }
  IoCounters counters() const;
  IoBackend backend() const noexcept { return backend_; }

 private:
  void activate_locked();  // creates the poller (under mutex_); throws std::system_error
  void free_released();
  void dispatch();
  void finish(ScheduledIo* io, int error) noexcept;  // the poller's last event for `io`
  void run_holder_work() noexcept;  // if it was asked for (a throw would end the process)

  const std::shared_ptr<ThreadParker> idle_;
  const IoBackend backend_;
  const PollerFactory make_poller_;
  // Created once by activate_locked (under mutex_) before active_'s release store; used by
  // the holder and unpark after an acquire load of active_ that saw true.
  std::unique_ptr<IoPoller> poller_;
  // False until the first registration; then true for good. Stored (release) under mutex_
  // after the poller exists, then the idle parker is unparked; loaded (acquire) by park —
  // which parks in the idle parker while it reads false — and by unpark, which then wakes
  // the poller. unpark unparks the idle parker too, whatever it read: a holder that read
  // false just before the switch parks there, and the token brings it back to the poller.
  Atomic<bool> active_{false};
  mutable std::mutex mutex_;
  ScheduledIo* registry_ = nullptr;     // guarded by mutex_: live registrations
  ScheduledIo* releasing_ = nullptr;    // guarded by mutex_: released, awaiting their last event
  std::size_t registered_ = 0;          // guarded by mutex_
  std::uint64_t rearms_ = 0;            // guarded by mutex_
  std::vector<ScheduledIo*> released_;  // guarded by mutex_: removed, not yet freed
  bool shut_down_ = false;              // guarded by mutex_
  // Set (release) by remove after it queued a registration; exchanged (acquire) by the holder
  // before it takes the queue, so parks without removals do not take the mutex.
  Atomic<bool> has_released_{false};
  // Registrations made so far: fetch_add (release) by add after it built the ScheduledIo and
  // before it arms the poller; loaded (acquire) by the holder after each wait that returned
  // events, before it touches them. The hand-over itself is ordered by the kernel (an fd's
  // arming happens before any wait that reports it); the C++ model alone would not make
  // the holder's load see the increment, but a thread sanitizer sees the value the load
  // read, so this pair makes the hand-over visible to it (for one load per wait).
  Atomic<std::uint64_t> adds_{0};
  // Written by the holder only (relaxed increments); read by counters().
  Atomic<std::uint64_t> events_{0};
  // Incremented (relaxed) by accept futures that back off; read by counters().
  Atomic<std::uint64_t> accept_backoffs_{0};
  std::vector<IoEvent> ready_;         // the holder's (park)
  std::function<void()> holder_work_;  // set once by set_holder_work; run by the holder
  WorkRequest holder_work_requested_;  // set by request_holder_work, taken by the holder
};

}  // namespace spool::detail
