// What guards a pipe write against SIGPIPE, and what it costs. On a runtime's worker (one of
// spool's threads, which keep SIGPIPE blocked for good) a write is one syscall: no signal
// mask call surrounds it. On another thread the mask is set around the write, and a SIGPIPE
// that the application left pending (having blocked SIGPIPE itself) stays pending.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>
#include <system_error>

#include "spool/spool.hpp"
#include "support/seccomp.hpp"

namespace {

using spool::PipeWriter;
using spool::Task;

// True if SIGPIPE is pending for this thread (or the process).
bool sigpipe_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}

// A write to `w`, whose reader is gone: true if it threw EPIPE.
Task<bool> write_is_epipe(PipeWriter& w) {
  try {
    co_await w.write_all(std::string_view("nobody reads this"));
  } catch (const std::system_error& e) {
    co_return e.code() == std::errc::broken_pipe;
  }
  co_return false;
}

// A seccomp filter on the worker thread kills the process at its first rt_sigprocmask or
// rt_sigpending: a hundred writes (the pipe has room) make neither.
TEST(PipeSigpipeDeathTest, AWriteOnAWorkerIsOneSyscall) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto rt = spool::Builder::multi_thread().worker_threads(1).build();
        rt.block_on(rt.spawn([]() -> Task<void> {
          auto ends = spool::pipe();
          if (!spool_test::kill_on_syscalls({SYS_rt_sigprocmask, SYS_rt_sigpending})) {
            std::_Exit(2);
          }
          for (int i = 0; i < 100; ++i)
            co_await ends.second.write(std::string_view("16 bytes, each."));
          std::_Exit(0);
        }()));
        std::_Exit(3);
      },
      ::testing::ExitedWithCode(0), "");
}

// On a worker: EPIPE, no SIGPIPE left pending, and SIGPIPE still blocked there.
TEST(PipeSigpipe, EpipeOnAWorkerLeavesNoSigpipePending) {
  ASSERT_EQ(::signal(SIGPIPE, SIG_DFL), SIG_DFL);
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  const bool ok = rt.block_on(rt.spawn([]() -> Task<bool> {
    auto [r, w] = spool::pipe();
    r.close();
    const bool epipe = co_await write_is_epipe(w);
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, nullptr, &mask);
    co_return epipe && !sigpipe_pending() && sigismember(&mask, SIGPIPE) == 1;
  }()));
  EXPECT_TRUE(ok);
}

// On a thread where the application blocks SIGPIPE and has one pending: the write's EPIPE
// takes nothing of the application's (its SIGPIPE stays pending), and its mask stays as it was.
TEST(PipeSigpipe, AnApplicationsPendingSigpipeStaysPending) {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  sigset_t old;
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &pipe, &old), 0);
  ASSERT_EQ(pthread_kill(pthread_self(), SIGPIPE), 0);
  const bool epipe = spool::block_on([]() -> Task<bool> {
    auto [r, w] = spool::pipe();
    r.close();
    co_return co_await write_is_epipe(w);
  }());
  EXPECT_TRUE(epipe);
  EXPECT_TRUE(sigpipe_pending());
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  EXPECT_EQ(sigismember(&mask, SIGPIPE), 1);
  const timespec zero{};
  EXPECT_EQ(sigtimedwait(&pipe, nullptr, &zero), SIGPIPE);  // (taken back: the test's own)
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace
