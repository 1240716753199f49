// Child: waiting for, signalling and letting go of a child process; ExitStatus.
#include "spool/process/child.hpp"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>

#include "process/exit_watch.hpp"
#include "process/orphan_reaper.hpp"
#include "process/pidfd.hpp"
#include "spool/combinators/when_all.hpp"
#include "spool/coop.hpp"

namespace spool::process {

namespace {

[[noreturn]] void throw_child_error(int err, const char* what, pid_t pid) {
  std::string msg = std::string(what) + " (pid " + std::to_string(pid) + ")";
  if (err == ECHILD) {
    msg +=
        ": someone else reaped the child (a waitpid(-1) in a SIGCHLD handler, or SIGCHLD "
        "set to SIG_IGN); leave spool's children to spool";
  }
  throw std::system_error(err, std::generic_category(), msg);
}

// Everything `r` gives until its end ("" without a pipe).
Task<std::string> read_to_end(std::optional<PipeReader> r) {
  std::string out;
  if (!r) co_return out;
  std::array<char, 16 * 1024> buf{};
  while (const std::size_t n = co_await r->read(buf)) out.append(buf.data(), n);
  co_return out;
}

// wait_with_output's body: `child` is its own, moved in when the call was made.
Task<Output> collect_output(Child child) {
  child.stdin.reset();
  auto [out, err] =
      co_await when_all(read_to_end(std::move(child.stdout)), read_to_end(std::move(child.stderr)));
  const ExitStatus status = co_await child.wait();
  co_return Output{status, std::move(out), std::move(err)};
}

}  // namespace

std::optional<int> ExitStatus::code() const noexcept {
  if (!WIFEXITED(raw_)) return std::nullopt;
  return WEXITSTATUS(raw_);
}

std::optional<int> ExitStatus::signal() const noexcept {
  if (!WIFSIGNALED(raw_)) return std::nullopt;
  return WTERMSIG(raw_);
}

bool ExitStatus::core_dumped() const noexcept { return WIFSIGNALED(raw_) && WCOREDUMP(raw_); }

std::string ExitStatus::to_string() const {
  if (auto c = code()) return "exit status " + std::to_string(*c);
  if (auto s = signal()) {
    return "signal " + std::to_string(*s) + " (" + ::strsignal(*s) + ")" +
           (core_dumped() ? " (core dumped)" : "");
  }
  return "wait status " + std::to_string(raw_);
}

Child::Child(Child&& other) noexcept
    : stdin(std::move(other.stdin)),
      stdout(std::move(other.stdout)),
      stderr(std::move(other.stderr)),
      pid_(std::exchange(other.pid_, -1)),
      status_(other.status_),
      pidfd_(std::move(other.pidfd_)),
      watch_(std::move(other.watch_)),
      kill_on_drop_(other.kill_on_drop_),
      reaped_elsewhere_(other.reaped_elsewhere_) {
  other.pidfd_.reset();
}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    let_go();
    stdin = std::move(other.stdin);
    stdout = std::move(other.stdout);
    stderr = std::move(other.stderr);
    pid_ = std::exchange(other.pid_, -1);
    status_ = other.status_;
    pidfd_ = std::move(other.pidfd_);
    other.pidfd_.reset();
    watch_ = std::move(other.watch_);
    kill_on_drop_ = other.kill_on_drop_;
    reaped_elsewhere_ = other.reaped_elsewhere_;
  }
  return *this;
}

Child::~Child() { let_go(); }

void Child::let_go() noexcept {
  if (pid_ >= 0 && !status_ && !reaped_elsewhere_) {
    if (kill_on_drop_) {
      try {
        kill(SIGKILL);
      } catch (const std::system_error&) {
        // (EPERM: a setuid child; it is still reaped below once it exits)
      }
    }
    // The ExitWatch's thread reaps on its own. Else the reaper takes the child with its
    // pidfd (a new one if it lost it: a failed re-registration, then a failed watch),
    // unless it has exited already (then it is reaped here, or was by someone else).
    if (!watch_) {
      const int fd = pidfd_ ? pidfd_->release() : detail::open_child_pidfd(pid_);
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == 0) {
        detail::OrphanReaper::instance().adopt(pid_, fd);
      } else if (fd >= 0) {
        ::close(fd);
      }
    }
  }
  pidfd_.reset();
  watch_.reset();
  pid_ = -1;
  status_.reset();
  reaped_elsewhere_ = false;
}

void Child::watch_exit(int pidfd) {
  if (pidfd >= 0) {
    try {
      pidfd_.emplace(pidfd);
      return;
    } catch (...) {
      ::close(pidfd);  // (no driver takes it now: the runtime shuts down, say)
    }
  }
  watch_ = detail::ExitWatch::start(pid_);
}

std::optional<pid_t> Child::id() const noexcept {
  if (pid_ < 0 || status_ || reaped_elsewhere_) return std::nullopt;
  return pid_;
}

std::optional<ExitStatus> Child::reap_nohang() {
  if (status_ || pid_ < 0) return status_;
  if (reaped_elsewhere_) throw_child_error(ECHILD, "spool::process::Child::wait", pid_);
  if (watch_) {
    const std::optional<int> r = watch_->result();
    if (!r) return std::nullopt;
    if (*r < 0) throw_child_error(-*r, "spool::process::Child::wait", pid_);
    status_.emplace(*r);
    return status_;
  }
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0 || (r < 0 && errno == EINTR)) return std::nullopt;
  if (r < 0) throw_child_error(errno, "spool::process::Child::wait", pid_);
  status_.emplace(status);
  pidfd_.reset();
  return status_;
}

void Child::check_not_moved_from(const char* call) const {
  if (pid_ < 0) {
    throw std::logic_error(std::string(call) +
                           " on a moved-from Child; use the object it was moved to");
  }
}

Poll<ExitStatus> Child::poll_wait(Context& cx, std::optional<AsyncFdReadyFuture>& exited) {
  check_not_moved_from("spool::process::Child::wait");
  for (;;) {
    if (std::optional<ExitStatus> s = reap_nohang()) return *s;
    if (!pidfd_ && !watch_) watch_exit(-1);  // (a watch_exit below failed: again)
    if (watch_) {
      if (watch_->poll(cx).is_pending()) return pending;
      continue;  // reap_nohang takes the result
    }
    if (!exited) exited.emplace(pidfd_->readable());
    std::optional<AsyncFdReadyGuard> guard;
    try {
      Poll<AsyncFdReadyGuard> r = exited->poll(cx);
      if (r.is_pending()) return pending;
      guard.emplace(r.value());
    } catch (const std::system_error& e) {
      // The runtime the pidfd was registered under has shut down (the child outlived it):
      // register it with the driver of whoever waits now, or give the child a thread.
      if (e.code() != std::errc::operation_canceled) throw;
      exited.reset();
      const int fd = pidfd_->release();
      pidfd_.reset();
      watch_exit(fd);
      continue;
    }
    exited.reset();
    if (std::optional<ExitStatus> s = reap_nohang()) return *s;
    guard->clear_ready();  // (a pidfd is readable only once the child exited: not reached)
  }
}

Poll<ExitStatus> ChildWaitFuture::poll(Context& cx) {
  if (!spool::detail::coop_poll_proceed(cx)) return pending;
  return child_->poll_wait(cx, exited_);
}

ChildWaitFuture Child::wait() {
  stdin.reset();
  return ChildWaitFuture(*this);
}

std::optional<ExitStatus> Child::try_wait() {
  check_not_moved_from("spool::process::Child::try_wait");
  return reap_nohang();
}

void Child::kill(int signal) {
  check_not_moved_from("spool::process::Child::kill");
  if (status_ || reaped_elsewhere_) return;  // (the pid is not ours to signal)
  int err = 0;
  if (watch_) {
    err = watch_->kill(signal);
  } else if (pidfd_) {
    if (::syscall(SYS_pidfd_send_signal, pidfd_->fd(), signal, nullptr, 0) != 0) err = errno;
  } else if (::kill(pid_, signal) != 0) {  // (not reaped: only a wait of ours reaps it)
    err = errno;
  }
  // ESRCH: it has exited and is not reaped yet: nothing left to signal.
  if (err != 0 && err != ESRCH) throw_child_error(err, "spool::process::Child::kill", pid_);
}

Task<Output> Child::wait_with_output() && { return collect_output(std::move(*this)); }

}  // namespace spool::process
