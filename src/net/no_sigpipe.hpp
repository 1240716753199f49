// NoSigpipe: a write to a pipe whose reader is gone fails with EPIPE instead of killing the
// process with SIGPIPE (send has MSG_NOSIGNAL for sockets; write has nothing alike).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

namespace spool::detail {

// Blocks SIGPIPE on the calling thread for its lifetime. SIGPIPE from a write is sent to the
// writing thread, so it stays pending there; `consume_if_raised` takes it back after an EPIPE,
// unless one was pending before (another write's, which the application blocked and keeps).
// Four system calls around each pipe write, and no process-wide change: the application's
// own SIGPIPE disposition stays as it set it.
class NoSigpipe {
 public:
  NoSigpipe() noexcept {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

  // After a write that failed with `err`: takes the SIGPIPE it raised. errno is kept.
  void consume_if_raised(int err) noexcept {
    if (err != EPIPE || was_pending_) return;
    const timespec zero{};
    while (sigtimedwait(&pipe_, nullptr, &zero) < 0 && errno == EINTR) {
    }
    errno = err;
  }

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
};

}  // namespace spool::detail
