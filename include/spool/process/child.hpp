// spool::process::Child: a running child process — its exit awaited without a SIGCHLD
// handler, its piped stdin / stdout / stderr as async pipe streams.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <memory>
#include <optional>
#include <string>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task.hpp"
#include "spool/io/async_fd.hpp"
#include "spool/io/pipe.hpp"

namespace spool::detail {
class ExitWatch;  // the fallback without pidfd (src/process/exit_watch.hpp)
}  // namespace spool::detail

namespace spool::process {

/// How a child ended: it exited with a code, or a signal killed it.
class SPOOL_API ExitStatus {
 public:
  /// From a wait status as waitpid gives it.
  explicit ExitStatus(int raw) noexcept : raw_(raw) {}
  /// It exited with code 0.
  bool success() const noexcept { return code() == 0; }
  /// The exit code, if it exited (std::nullopt if a signal killed it).
  std::optional<int> code() const noexcept;
  /// The signal that killed it, if one did.
  std::optional<int> signal() const noexcept;
  /// A signal killed it and it dumped core.
  bool core_dumped() const noexcept;
  /// The wait status itself.
  int raw() const noexcept { return raw_; }
  /// "exit status 3" or "signal 9 (Killed)".
  std::string to_string() const;
  /// Equal wait statuses.
  friend bool operator==(const ExitStatus&, const ExitStatus&) = default;

 private:
  int raw_;
};

/// What Child::wait_with_output and Command::output give: the status and everything the
/// child wrote to its piped stdout and stderr ("" for one that was not piped).
struct Output {
  ExitStatus status;   ///< how it ended
  std::string stdout;  ///< its standard output
  std::string stderr;  ///< its standard error
};

class Child;

/// The future of Child::wait: ready with the exit status once the child has exited (and
/// is reaped). It may be dropped and made again (wait is cancel-safe); it must not move once
/// polled, and the Child must outlive it.
class SPOOL_API ChildWaitFuture {
 public:
  /// Waits for `child`.
  explicit ChildWaitFuture(Child& child) noexcept : child_(&child) {}
  /// Ready with the status. Throws std::system_error ECHILD when something else reaped the
  /// child first (a SIGCHLD handler calling waitpid(-1), or SIGCHLD set to SIG_IGN).
  Poll<ExitStatus> poll(Context& cx);

 private:
  Child* child_;
  std::optional<AsyncFdReadyFuture> exited_;  // the pidfd's readability, once waited for
};

/// A child process made by Command::spawn. Its exit is awaited through a pidfd (Linux 5.3
/// and later) registered with the I/O driver like a socket, so no SIGCHLD handler is
/// installed and the application's stays its own; where pidfd_open is refused (an older
/// kernel, a seccomp filter), a thread of the child's own waits for it (docs/process.md).
///
/// A Child destroyed before its exit was awaited is still reaped: at once if it has exited,
/// else by a process-wide reaper thread when it does (no zombie), and it is first
/// killed with SIGKILL if Command::kill_on_drop was set. A child may outlive the runtime it
/// was spawned in: its wait then goes through the driver of the executor that awaits it.
/// One task uses a Child at a time.
class SPOOL_API Child {
 public:
  /// The write end of the child's stdin when it was piped: `co_await
  /// child.stdin->write_all(data)`; reset it (or move it away and drop it) to close it,
  /// which many programs need to see before they exit.
  std::optional<PipeWriter> stdin;
  /// The read end of the child's stdout when it was piped.
  std::optional<PipeReader> stdout;
  /// The read end of the child's stderr when it was piped.
  std::optional<PipeReader> stderr;

  /// Takes over `other`'s child (other is left empty).
  Child(Child&& other) noexcept;
  /// Lets go of this child (as the destructor does), then takes over `other`'s.
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  /// Reaps the child, now or later (see the class comment); kills it first if
  /// kill_on_drop was set and it still runs.
  ~Child();

  /// The process id, while it is not reaped (after that, the kernel may give the number to
  /// another process).
  std::optional<pid_t> id() const noexcept;
  /// Closes stdin (so a child that reads it to its end can finish), then waits for the
  /// exit: `ExitStatus s = co_await child.wait();`. Once reaped, ready at once with the
  /// same status.
  ChildWaitFuture wait();
  /// The exit status if the child has exited (reaping it), std::nullopt while it runs;
  /// never waits. Throws std::system_error ECHILD as wait does, std::logic_error on a
  /// moved-from Child (as wait, and kill).
  std::optional<ExitStatus> try_wait();
  /// Sends `signal` (SIGKILL unless told) to the child; nothing once it is reaped (its pid
  /// may belong to another process by then: pidfd_send_signal, through a pidfd checked to
  /// be this child's, does not reach one; docs/process.md says where that check ends). Does not
  /// wait: co_await wait() for that. Throws std::system_error if the kernel refuses,
  /// std::logic_error on a moved-from Child.
  void kill(int signal = SIGKILL);
  /// Reads stdout and stderr to their ends while it waits for the exit (closing stdin
  /// first), so a child that fills a pipe cannot deadlock: the status and the bytes.
  Task<Output> wait_with_output() &&;

 private:
  friend class Command;
  friend class ChildWaitFuture;
  Child() noexcept = default;
  // The status if it exited, reaping it (waitpid WNOHANG, or the exit watch's result).
  std::optional<ExitStatus> reap_nohang();
  // Throws std::logic_error naming `call` on a moved-from Child.
  void check_not_moved_from(const char* call) const;
  Poll<ExitStatus> poll_wait(Context& cx, std::optional<AsyncFdReadyFuture>& exited);
  void let_go() noexcept;  // the destructor's work
  // Watches for the exit through `pidfd` (taken; -1: none) registered with the current
  // driver, else through a thread of the child's own (ExitWatch); throws if neither works.
  void watch_exit(int pidfd);

  pid_t pid_ = -1;                            // -1: no child (moved from)
  std::optional<ExitStatus> status_;          // once reaped
  std::optional<AsyncFd> pidfd_;              // the pidfd path
  std::shared_ptr<detail::ExitWatch> watch_;  // the fallback path
  bool kill_on_drop_ = false;
  // Something else reaped it before spool had a pidfd of it: wait throws ECHILD, and kill
  // signals nothing (the number may be another process's by now).
  bool reaped_elsewhere_ = false;
};

}  // namespace spool::process
