// OrphanReaper: the process-wide thread that reaps dropped children.
#include "process/orphan_reaper.hpp"

#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <thread>

#include "sync/thread.hpp"

namespace spool::detail {

OrphanReaper& OrphanReaper::instance() {
  static OrphanReaper* const reaper = new OrphanReaper;  // never destroyed: its thread runs on
  return *reaper;
}

bool OrphanReaper::start_locked() noexcept {
  if (epoll_fd_ >= 0) return true;
  const int fd = ::epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) return false;
  try {
    start_thread("spool-reaper", [this, fd] { run(fd); }).detach();
  } catch (...) {
    ::close(fd);
    return false;
  }
  epoll_fd_ = fd;
  return true;
}

void OrphanReaper::adopt(pid_t pid, int pidfd) noexcept {
  std::lock_guard lock(mutex_);
  ++pending_;
  if (pidfd >= 0) {
    epoll_event e{};
    e.events = EPOLLIN;  // level-triggered: an exit stays reported until the reap
    e.data.u64 =
        (std::uint64_t{static_cast<std::uint32_t>(pid)} << 32) | static_cast<std::uint32_t>(pidfd);
    if (start_locked() && ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, pidfd, &e) == 0) return;
    ::close(pidfd);
  }
  // The last resort: a blocking waitpid on a thread of its own (it counts as pending too).
  try {
    std::thread([this, pid] {
      (void)::waitpid(pid, nullptr, 0);
      reaped();
    }).detach();
  } catch (...) {
    --pending_;  // (no thread: a zombie until this process exits)
  }
}

void OrphanReaper::reaped() noexcept {
  std::lock_guard lock(mutex_);
  if (--pending_ == 0) idle_.notify_all();
}

void OrphanReaper::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return pending_ == 0; });
}

void OrphanReaper::run(int epoll_fd) noexcept {
  std::array<epoll_event, 64> events{};
  for (;;) {
    const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < n; ++i) {
      const std::uint64_t data = events[static_cast<std::size_t>(i)].data.u64;
      const auto pid = static_cast<pid_t>(data >> 32);
      const auto pidfd = static_cast<int>(data & 0xffffffffu);
      if (::waitpid(pid, nullptr, WNOHANG) == 0) continue;  // not yet (ECHILD: reaped elsewhere)
      // Out of the set before the close: a child being spawned meanwhile holds a copy of
      // every descriptor until its exec, so the close alone may leave the pidfd's file (and
      // its registration) alive, and a later event would close a reused number.
      ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, pidfd, nullptr);
      ::close(pidfd);
      reaped();
    }
  }
}

}  // namespace spool::detail
