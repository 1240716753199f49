// EpollPoller: the I/O driver's waits on Linux epoll (edge-triggered, one registration per fd).
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>

#include "driver/io/io_poller.hpp"
#include "spool/detail/fatal_misuse.hpp"

namespace spool::detail {

namespace {

constexpr std::size_t kMaxEvents = 1024;

class EpollPoller final : public IoPoller {
 public:
  EpollPoller() : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)), events_(kMaxEvents) {
    if (epoll_fd_ < 0) throw_errno(errno, "spool: epoll_create1 for the I/O driver");
    epoll_event e{};
    e.events = EPOLLIN | EPOLLET;
    e.data.ptr = nullptr;  // the wake event: the only registration without a ScheduledIo
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_.fd(), &e) != 0) {
      const int err = errno;
      ::close(epoll_fd_);
      throw_errno(err, "spool: epoll_ctl(ADD) of the I/O driver's eventfd");
    }
  }
  ~EpollPoller() override { ::close(epoll_fd_); }

  void arm(ScheduledIo* io, const char* what) override {
    epoll_event e{};
    e.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    e.data.ptr = io;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, io->fd(), &e) != 0) {
      throw_errno(errno, std::string(what) + ": epoll_ctl(ADD)");
    }
  }

  // A wait begun before the removal may still return it, but its events are dispatched
  // before anything is freed, and no later wait can return it.
  bool disarm(ScheduledIo* io) noexcept override {
    // Cannot fail for a registered fd that is still open (the caller closes it after this).
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, io->fd(), nullptr);
    return true;
  }

  void wait(const timespec* timeout, std::vector<IoEvent>& out) override {
    const int n = wait_syscall(timeout);
    for (int i = 0; i < n; ++i) {
      const epoll_event& e = events_[static_cast<std::size_t>(i)];
      if (e.data.ptr == nullptr) {
        wake_.drain();
      } else {
        out.push_back({static_cast<ScheduledIo*>(e.data.ptr), readiness_of(e.events), false});
      }
    }
  }

  void wake() noexcept override { wake_.signal(); }

 private:
  // epoll_pwait2 (nanosecond timeouts), or epoll_wait where the kernel lacks it: the number
  // of events, or -1 for EINTR. Any other failure is a bug: fatal.
  int wait_syscall(const timespec* timeout) {
    const int max = static_cast<int>(events_.size());
    if (use_pwait2_) {
      const int n = ::epoll_pwait2(epoll_fd_, events_.data(), max, timeout, nullptr);
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
    const int n = ::epoll_wait(epoll_fd_, events_.data(), max, ms);
    if (n < 0 && errno != EINTR) fatal_misuse("spool: epoll_wait failed");
    return n;
  }

  WakeEvent wake_;
  const int epoll_fd_;
  std::vector<epoll_event> events_;  // wait's
  bool use_pwait2_ = true;           // wait's: false once the kernel said ENOSYS
};

}  // namespace

std::unique_ptr<IoPoller> make_epoll_poller() { return std::make_unique<EpollPoller>(); }

}  // namespace spool::detail
