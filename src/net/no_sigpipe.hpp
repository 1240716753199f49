// NoSigpipe: a write to a pipe whose reader is gone fails with EPIPE instead of killing the
// process with SIGPIPE (send has MSG_NOSIGNAL for sockets; write has nothing alike).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

#include "sync/thread.hpp"

namespace spool::detail {

// Keeps SIGPIPE blocked on the calling thread for its lifetime. SIGPIPE from a write is sent
// to the writing thread, so it stays pending there; `consume_if_raised` takes it back after
// an EPIPE, unless one was pending before (another write's, which the application blocked
// and keeps). No process-wide change: the application's own SIGPIPE disposition stays as it
// set it. What it costs around each write:
// - on spool's own threads (workers, blocking pool: sigpipe_blocked_for_life), nothing —
//   SIGPIPE is blocked there for good, so a write is one syscall;
// - on another thread, two: the mask is set and restored (and where the application blocks
//   SIGPIPE itself, there is nothing to restore, but a SIGPIPE may be pending: sigpending).
class NoSigpipe {
 public:
  NoSigpipe() noexcept {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    if (sigpipe_blocked_for_life()) return;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    restore_ = sigismember(&old_, SIGPIPE) == 0;
    // (Unblocked until now, no SIGPIPE was pending for this thread: it would have been
    // delivered.)
    if (!restore_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    }
  }
  ~NoSigpipe() {
    if (restore_) pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
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
  bool restore_ = false;      // the mask is to be restored (SIGPIPE was not blocked before)
  bool was_pending_ = false;  // a SIGPIPE was pending before the write: not ours to take
};

}  // namespace spool::detail
