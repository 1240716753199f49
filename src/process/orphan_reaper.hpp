// OrphanReaper: reaps the children whose Child was destroyed before they exited.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace spool::detail {

// One per process, made with the first orphan and never destroyed: a thread that waits in
// an epoll set of its own on the orphans' pidfds and reaps each as it exits. Its own set,
// not a runtime's driver, since an orphan may outlive every runtime. Costs nothing until a
// Child is dropped while its process runs. Fork-safe (pthread_atfork): a child process made
// by fork() gets a fresh reaper.
class OrphanReaper {
 public:
  // The process's reaper.
  static OrphanReaper& instance();

  // Takes `pidfd`, a pidfd of `pid` (our child, not reaped; -1 if there is none), and reaps
  // the child once it has exited. Never throws: without a pidfd, or if the reaper cannot
  // start (no thread, no descriptor), a thread of the child's own waits for it; if that
  // fails too, the child stays a zombie until this process exits.
  void adopt(pid_t pid, int pidfd) noexcept;
  // Blocks until every child adopted so far is reaped (for tests).
  void wait_idle();

 private:
  OrphanReaper() = default;
  bool start_locked() noexcept;     // the epoll set and the thread; false if either fails
  void run(int epoll_fd) noexcept;  // the thread's body
  void reaped() noexcept;           // one adopted child less
  // pthread_atfork's handlers: a child process made by fork() starts with a reaper of its
  // own, unlocked, with nothing adopted and no thread (until its first orphan).
  static void before_fork() noexcept;
  static void after_fork_in_parent() noexcept;
  static void after_fork_in_child() noexcept;

  std::mutex mutex_;
  std::condition_variable idle_;  // notified when pending_ drops to 0
  std::size_t pending_ = 0;       // guarded by mutex_: adopted, not yet reaped (either way)
  int epoll_fd_ = -1;             // guarded by mutex_: the set, once the thread runs
};

}  // namespace spool::detail
