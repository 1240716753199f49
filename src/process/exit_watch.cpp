// ExitWatch: the thread that waits for one child where there is no pidfd.
#include "process/exit_watch.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <mutex>
#include <string>

#include "sync/thread.hpp"

namespace spool::detail {

std::shared_ptr<ExitWatch> ExitWatch::start(pid_t pid) {
  std::shared_ptr<ExitWatch> watch(new ExitWatch(pid));
  start_thread("spool-wait-" + std::to_string(pid), [watch] { watch->run(); }).detach();
  return watch;
}

void ExitWatch::run() noexcept {
  siginfo_t info{};
  int result = 0;
  // WNOWAIT: the child stays a zombie, its pid its own, until the reap under the mutex.
  while (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) {
      result = -errno;
      break;
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (result == 0) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, 0);
      result = r == pid_ ? status : -errno;
    }
    reaped_ = true;  // (or reaped by someone else: the pid is no longer ours to signal)
  }
  result_ = result;
  done_.store(true, std::memory_order_release);  // see done_
  waker_.wake();
}

std::optional<int> ExitWatch::result() const noexcept {
  if (!done_.load(std::memory_order_acquire)) return std::nullopt;
  return result_;
}

Poll<int> ExitWatch::poll(Context& cx) {
  if (auto r = result()) return *r;
  waker_.register_waker(cx.waker());
  // A wake between the first load and the registration found no waker; this load sees it.
  if (auto r = result()) return *r;
  return pending;
}

int ExitWatch::kill(int sig) noexcept {
  std::lock_guard lock(mutex_);
  if (reaped_) return 0;
  return ::kill(pid_, sig) == 0 ? 0 : errno;
}

}  // namespace spool::detail
