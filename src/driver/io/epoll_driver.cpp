#include "driver/io/epoll_driver.hpp"

#include "spool/detail/fatal_misuse.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <system_error>

namespace spool::detail {

namespace {

constexpr std::size_t kMaxEvents = 1024;

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// The readiness bits an epoll event reports.
std::uint32_t bits_of(std::uint32_t events) noexcept {
  std::uint32_t bits = 0;
  if ((events & EPOLLIN) != 0) bits |= ScheduledIo::kReadable;
  if ((events & EPOLLOUT) != 0) bits |= ScheduledIo::kWritable;
  if ((events & EPOLLRDHUP) != 0) bits |= ScheduledIo::kReadable | ScheduledIo::kReadClosed;
  if ((events & EPOLLHUP) != 0) {
    bits |= ScheduledIo::kReadable | ScheduledIo::kReadClosed | ScheduledIo::kWritable |
            ScheduledIo::kWriteClosed;
  }
  // The syscall reports the error itself: wake both directions to make it.
  if ((events & EPOLLERR) != 0) {
    bits |= ScheduledIo::kReadable | ScheduledIo::kWritable | ScheduledIo::kError;
  }
  return bits;
}

}  // namespace

EpollDriver::EpollDriver(std::shared_ptr<ThreadParker> idle) : idle_(std::move(idle)) {}

EpollDriver::~EpollDriver() {
  // Every socket holds the driver stack, so no registration is live; queued ones may be.
  free_released();
  for (ScheduledIo* io = registry_; io != nullptr;) delete std::exchange(io, io->next);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (event_fd_ >= 0) ::close(event_fd_);
}

void EpollDriver::activate_locked() {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) throw_errno(errno, "spool: epoll_create1 for the I/O driver");
  // Starts readable: an unpark that went only to the idle parker (it read "not active"
  // before the switch) while its holder was on the way into this park must not be lost, so
  // the first wait in epoll returns at once (a spurious return, which Park allows).
  const int ev = ::eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
  if (ev < 0) {
    const int err = errno;
    ::close(ep);
    throw_errno(err, "spool: eventfd for the I/O driver");
  }
  epoll_event e{};
  e.events = EPOLLIN | EPOLLET;
  e.data.ptr = nullptr;  // the eventfd: the only registration without a ScheduledIo
  if (::epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e) != 0) {
    const int err = errno;
    ::close(ep);
    ::close(ev);
    throw_errno(err, "spool: epoll_ctl(ADD) of the I/O driver's eventfd");
  }
  epoll_fd_ = ep;
  event_fd_ = ev;
  events_buffer_.resize(kMaxEvents);
  active_.store(true, std::memory_order_release);
  idle_->unpark();  // a holder parked below comes back and parks in epoll_wait
}

ScheduledIo* EpollDriver::add(int fd, const char* what) {
  std::lock_guard lock(mutex_);
  if (shut_down_) {
    throw std::system_error(std::make_error_code(std::errc::operation_canceled),
                            std::string(what) +
                                ": the runtime this socket belongs to has shut down; open "
                                "sockets under a runtime that outlives them");
  }
  if (!active_.load(std::memory_order_relaxed)) activate_locked();
  auto* io = new ScheduledIo(fd);
  epoll_event e{};
  e.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  e.data.ptr = io;
  adds_.fetch_add(1, std::memory_order_release);
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &e) != 0) {
    const int err = errno;
    delete io;
    throw_errno(err, std::string(what) + ": epoll_ctl(ADD)");
  }
  io->next = registry_;
  if (registry_ != nullptr) registry_->prev = io;
  registry_ = io;
  ++registered_;
  return io;
}

void EpollDriver::remove(ScheduledIo* io) noexcept {
  // Outside the lock: dropping the last waker of a task destroys it, which may close sockets.
  io->drop_wakers();
  std::lock_guard lock(mutex_);
  // Cannot fail for a registered fd that is still open (the caller closes it after this).
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, io->fd(), nullptr);
  if (io->prev != nullptr) io->prev->next = io->next;
  if (io->next != nullptr) io->next->prev = io->prev;
  if (registry_ == io) registry_ = io->next;
  --registered_;
  released_.push_back(io);
  has_released_.store(true, std::memory_order_release);
}

void EpollDriver::shutdown() {
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

void EpollDriver::free_released() {
  // Acquire: pairs with remove's release (the queue it filled is seen under the mutex).
  if (!has_released_.exchange(false, std::memory_order_acquire)) return;
  std::vector<ScheduledIo*> freed;
  {
    std::lock_guard lock(mutex_);
    freed.swap(released_);
  }
  for (ScheduledIo* io : freed) delete io;
}

void EpollDriver::park(std::optional<std::chrono::nanoseconds> timeout) {
  if (!active_.load(std::memory_order_acquire)) {
    idle_->park(timeout);
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
  const int n = wait(tsp);
  if (n > 0) dispatch(n);
}

int EpollDriver::wait(const timespec* timeout) {
  const int max = static_cast<int>(events_buffer_.size());
  if (use_pwait2_) {
    const int n = ::epoll_pwait2(epoll_fd_, events_buffer_.data(), max, timeout, nullptr);
    if (n >= 0 || errno == EINTR) return n;  // EINTR: a spurious return, which Park allows
    // Kernels before 5.11, or a seccomp filter that does not know the call.
    if (errno != ENOSYS && errno != EPERM) fatal_misuse("spool: epoll_pwait2 failed");
    use_pwait2_ = false;
  }
  int ms = -1;
  if (timeout != nullptr) {
    // Rounded up: never wake before the deadline the time driver asked for.
    const std::int64_t ns = std::int64_t{timeout->tv_sec} * 1'000'000'000 + timeout->tv_nsec;
    ms = static_cast<int>(std::min<std::int64_t>((ns + 999'999) / 1'000'000, INT32_MAX));
  }
  const int n = ::epoll_wait(epoll_fd_, events_buffer_.data(), max, ms);
  if (n < 0 && errno != EINTR) fatal_misuse("spool: epoll_wait failed");
  return n;
}

void EpollDriver::dispatch(int n) {
  (void)adds_.load(std::memory_order_acquire);  // see adds_
  std::uint64_t count = 0;
  for (int i = 0; i < n; ++i) {
    const epoll_event& e = events_buffer_[static_cast<std::size_t>(i)];
    auto* io = static_cast<ScheduledIo*>(e.data.ptr);
    if (io == nullptr) {
      std::uint64_t value;
      // Drains the counter so that the next unpark makes a new edge.
      [[maybe_unused]] const ssize_t r = ::read(event_fd_, &value, sizeof value);
      continue;
    }
    io->set_readiness(bits_of(e.events));
    ++count;
  }
  events_.store(events_.load(std::memory_order_relaxed) + count, std::memory_order_relaxed);
}

void EpollDriver::unpark() noexcept {
  if (active_.load(std::memory_order_acquire)) {
    const std::uint64_t one = 1;
    // EAGAIN only when the counter is about to overflow: it is readable then anyway.
    [[maybe_unused]] const ssize_t r = ::write(event_fd_, &one, sizeof one);
  }
  idle_->unpark();
}

IoCounters EpollDriver::counters() const {
  IoCounters c;
  c.events = events_.load(std::memory_order_relaxed);
  c.accept_backoffs = accept_backoffs_.load(std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  c.registered = registered_;
  return c;
}

}  // namespace spool::detail
