#include "driver/io/io_driver.hpp"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace spool::detail {

namespace {

void link(ScheduledIo*& head, ScheduledIo* io) noexcept {
  io->prev = nullptr;
  io->next = head;
  if (head != nullptr) head->prev = io;
  head = io;
}

void unlink(ScheduledIo*& head, ScheduledIo* io) noexcept {
  if (io->prev != nullptr) io->prev->next = io->next;
  if (io->next != nullptr) io->next->prev = io->prev;
  if (head == io) head = io->next;
}

void free_list(ScheduledIo* head) noexcept {
  while (head != nullptr) delete std::exchange(head, head->next);
}

std::unique_ptr<IoPoller> make_poller(IoBackend backend) {
  return backend == IoBackend::kIoUring ? make_uring_poller() : make_epoll_poller();
}

}  // namespace

IoBackend resolve_io_backend(std::optional<IoBackend> requested) {
  if (!requested) {
    const char* env = std::getenv("SPOOL_IO_BACKEND");
    const std::string_view name = env != nullptr ? env : "";
    if (name.empty() || name == "epoll") {
      requested = IoBackend::kEpoll;
    } else if (name == "io_uring") {
      requested = IoBackend::kIoUring;
    } else if (name == "auto") {
      requested = IoBackend::kAuto;
    } else {
      throw std::invalid_argument("spool: SPOOL_IO_BACKEND=" + std::string(name) +
                                  ": expected epoll, io_uring or auto (or leave it unset)");
    }
  }
  if (*requested == IoBackend::kEpoll) return IoBackend::kEpoll;
  try {
    probe_uring();
    return IoBackend::kIoUring;
  } catch (const std::system_error& e) {
    if (*requested == IoBackend::kAuto) return IoBackend::kEpoll;
    throw std::system_error(e.code(), std::string("spool::Builder: io_backend(kIoUring): ") +
                                          e.what() +
                                          "; IoBackend::kAuto falls back to epoll instead");
  }
}

IoDriver::IoDriver(std::shared_ptr<ThreadParker> idle, IoBackend backend, PollerFactory make)
    : idle_(std::move(idle)), backend_(backend), make_poller_(std::move(make)) {}

IoDriver::~IoDriver() {
  // Every socket holds the driver stack, so no registration is live; released ones may be.
  poller_.reset();  // first: the kernel forgets the registrations' addresses
  free_released();
  free_list(registry_);
  free_list(releasing_);
}

void IoDriver::activate_locked() {
  poller_ = make_poller_ ? make_poller_() : make_poller(backend_);
  active_.store(true, std::memory_order_release);
  idle_->unpark();  // a thread in the driver parked below comes back and parks in the poller
}

ScheduledIo* IoDriver::add(int fd, const char* what, bool refuse_duplicate) {
  std::lock_guard lock(mutex_);
  if (shut_down_) {
    throw std::system_error(std::make_error_code(std::errc::operation_canceled),
                            std::string(what) +
                                ": the runtime this socket belongs to has shut down; open "
                                "sockets under a runtime that outlives them");
  }
  if (refuse_duplicate) refuse_registered_locked(fd, what);
  if (!active_.load(std::memory_order_relaxed)) activate_locked();
  auto* io = new ScheduledIo(fd);
  adds_.fetch_add(1, std::memory_order_release);
  try {
    poller_->arm(io, what);
  } catch (...) {
    delete io;
    throw;
  }
  link(registry_, io);
  ++registered_;
  return io;
}

void IoDriver::refuse_registered(int fd, const char* what) const {
  std::lock_guard lock(mutex_);
  refuse_registered_locked(fd, what);
}

void IoDriver::refuse_registered_locked(int fd, const char* what) const {
  for (const ScheduledIo* io = registry_; io != nullptr; io = io->next) {
    if (io->fd() == fd) {
      throw std::system_error(std::make_error_code(std::errc::file_exists),
                              std::string(what) + ": descriptor " + std::to_string(fd) +
                                  " is registered with this runtime's I/O driver already (by "
                                  "another AsyncFd, a socket or a pipe); register it once and "
                                  "share that object, or dup() it first");
    }
  }
}

void IoDriver::count_ring_watch(bool added) noexcept {
  std::lock_guard lock(mutex_);
  if (added) {
    ++ring_watches_;
  } else {
    --ring_watches_;
  }
}

void IoDriver::remove(ScheduledIo* io, std::vector<Waker>* woken) noexcept {
  // Outside the lock: dropping the last waker of a task destroys it, which may close sockets.
  io->detach_waiters(woken);
  std::lock_guard lock(mutex_);
  unlink(registry_, io);
  --registered_;
  if (poller_->disarm(io)) {
    released_.push_back(io);
    has_released_.store(true, std::memory_order_release);
  } else {
    io->released = true;
    link(releasing_, io);
  }
}

void IoDriver::shutdown() {
  std::vector<Waker> to_wake;
  {
    std::lock_guard lock(mutex_);
    shut_down_ = true;
    for (ScheduledIo* io = registry_; io != nullptr; io = io->next) io->shut_down(to_wake);
  }
  // Outside the lock: a waker may run its task's code (a foreign executor's), which may
  // open or close sockets.
  for (Waker& w : to_wake) std::move(w).wake();
}

void IoDriver::free_released() {
  // Acquire: pairs with remove's release (the queue it filled is seen under the mutex).
  if (!has_released_.exchange(false, std::memory_order_acquire)) return;
  std::vector<ScheduledIo*> freed;
  {
    std::lock_guard lock(mutex_);
    freed.swap(released_);
  }
  for (ScheduledIo* io : freed) delete io;
}

void IoDriver::park(std::optional<std::chrono::nanoseconds> timeout) {
  if (!active_.load(std::memory_order_acquire)) {
    idle_->park(timeout);
    run_after_wait_work();
    return;
  }
  free_released();
  timespec ts{};
  timespec* tsp = nullptr;
  if (timeout) {
    const auto ns = std::max(timeout->count(), std::int64_t{0});
    ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    tsp = &ts;
  }
  poller_->wait(tsp, ready_);
  if (!ready_.empty()) dispatch();
  run_after_wait_work();
}

void IoDriver::set_after_wait_work(std::function<void()> work) {
  if (after_wait_work_) throw std::logic_error("spool: IoDriver::set_after_wait_work called twice");
  after_wait_work_ = std::move(work);
}

void IoDriver::request_after_wait_work() noexcept {
  after_wait_work_requested_.set();
  unpark();  // sticky: the next wait returns, and the park takes the request after it
}

void IoDriver::run_after_wait_work() noexcept {
  if (after_wait_work_requested_.take()) after_wait_work_();
}

void IoDriver::dispatch() {
  (void)adds_.load(std::memory_order_acquire);  // see adds_
  std::uint64_t count = 0;
  for (const IoEvent& e : ready_) {
    if (e.bits != 0) {
      e.io->set_readiness(e.bits);
      ++count;
    }
    if (e.last) finish(e.io, e.error);
  }
  ready_.clear();
  events_.store(events_.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
}

void IoDriver::finish(ScheduledIo* io, int error) noexcept {
  std::unique_lock lock(mutex_);
  if (io->released) {
    unlink(releasing_, io);
    lock.unlock();
    delete io;
    return;
  }
  if (error == 0) {
    // The kernel ended the watch on its own: watch again (the new watch reports what is
    // ready now), and let both directions try their syscalls meanwhile.
    try {
      poller_->arm(io, "spool: watching a socket again");
      ++rearms_;
    } catch (const std::system_error& e) {
      error = e.code().value();
    }
  }
  lock.unlock();
  if (error != 0) {
    io->fail(error);  // its operations fail with the errno instead of waiting for ever
  } else {
    io->set_readiness(ScheduledIo::kReadable | ScheduledIo::kWritable);
  }
}

void IoDriver::unpark() noexcept {
  if (active_.load(std::memory_order_acquire)) poller_->wake();
  idle_->unpark();
}

IoCounters IoDriver::counters() const {
  IoCounters c;
  c.events = events_.load(std::memory_order_relaxed);
  c.accept_backoffs = accept_backoffs_.load(std::memory_order_relaxed);
  c.worker_rings = worker_rings_.load(std::memory_order_relaxed);
  c.worker_rings_deferred = worker_rings_deferred_.load(std::memory_order_relaxed);
  c.worker_rings_refused = worker_rings_refused_.load(std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  c.registered = registered_ - ring_watches_;
  c.rearms = rearms_;
  return c;
}

}  // namespace spool::detail
