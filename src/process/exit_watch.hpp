// ExitWatch: a child's exit awaited by a thread of its own, where pidfd_open is refused.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>

#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"

namespace spool::detail {

// The fallback of Child on kernels before 5.3, or under a seccomp filter that refuses
// pidfd_open: a detached thread blocks in waitid for the child's exit, then reaps it and
// wakes the waiting task. It reaps whether or not a Child still waits (a dropped child is
// no zombie), and kill() never signals a reaped pid: the thread reaps, and kill signals,
// under one mutex, and the thread waits with WNOWAIT so the pid stays the child's (a
// zombie) until it holds the mutex. A thread per running child: the price of no pidfd.
class ExitWatch {
 public:
  // Starts the thread for `pid`, our child. Throws std::system_error when it cannot.
  static std::shared_ptr<ExitWatch> start(pid_t pid);

  // The wait status once the thread reaped the child, or -errno (ECHILD: someone else
  // reaped it); std::nullopt until then.
  std::optional<int> result() const noexcept;
  // Ready with result(); else pending, cx's waker woken when it comes.
  Poll<int> poll(Context& cx);
  // Sends `sig` unless the child is reaped: 0 or an errno.
  int kill(int sig) noexcept;

 private:
  explicit ExitWatch(pid_t pid) noexcept : pid_(pid) {}
  void run() noexcept;  // the thread's body

  const pid_t pid_;
  Mutex mutex_;
  bool reaped_ = false;  // guarded by mutex_
  // The wait status or -errno: written by the thread before done_'s release store, read
  // after an acquire load of done_ that saw true.
  int result_ = 0;
  // Stored true (release) by the thread once result_ is written; loaded (acquire) by
  // result() and poll().
  Atomic<bool> done_{false};
  // Registered by the waiting task (poll); woken by the thread after done_'s store.
  AtomicWaker waker_;
};

}  // namespace spool::detail
