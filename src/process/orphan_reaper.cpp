// OrphanReaper: the process-wide thread that reaps dropped children.
#include "process/orphan_reaper.hpp"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <new>
#include <thread>

#include "sync/thread.hpp"

namespace spool::detail {

namespace {
OrphanReaper* the_reaper = nullptr;  // set once, before the fork handlers that read it
}  // namespace

OrphanReaper& OrphanReaper::instance() {
  static OrphanReaper* const reaper = [] {
    the_reaper = new OrphanReaper;  // never destroyed: its thread runs on
    ::pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
    return the_reaper;
  }();
  return *reaper;
}

// fork() copies this object but not the thread: the child must not inherit the lock held
// by a thread that does not exist there, nor the parent's epoll set (shared with the
// parent: its orphans' events would reach the parent's thread), nor the parent's count.
void OrphanReaper::before_fork() noexcept { the_reaper->mutex_.lock(); }

void OrphanReaper::after_fork_in_parent() noexcept { the_reaper->mutex_.unlock(); }

void OrphanReaper::after_fork_in_child() noexcept {
  OrphanReaper& r = *the_reaper;
  if (r.epoll_fd_ >= 0) ::close(r.epoll_fd_);  // (the parent's copy stays open)
  r.epoll_fd_ = -1;                            // the next orphan starts a thread here
  r.pending_ = 0;                              // the parent's orphans are not our children
  // A fresh condition variable: a parent's thread waiting in wait_idle left its record in
  // this one, and a notify here could wait for that waiter forever.
  new (&r.idle_) std::condition_variable;
  r.mutex_.unlock();  // locked by before_fork, on the thread that forked: this one
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
