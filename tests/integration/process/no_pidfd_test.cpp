// Where pidfd_open is refused (a kernel before 5.3 says ENOSYS; a seccomp filter may say
// EPERM), each child is waited for by a thread of its own: exit codes, kill, try_wait and
// piped output still work. Run in a child process (a death test), where a seccomp filter
// refuses pidfd_open for good.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "spool/spool.hpp"
#include "support/process.hpp"
#include "support/seccomp.hpp"

namespace {

using spool::Task;
using spool::process::Child;
using spool::process::Command;
using spool::process::Stdio;

// The checks, run where pidfd_open is refused: true if all held.
bool children_work_without_pidfd() {
  if (::syscall(SYS_pidfd_open, ::getpid(), 0) >= 0 || errno != ENOSYS) return false;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  return rt.block_on([]() -> Task<bool> {
    const auto seven = co_await Command("sh").arg("-c").arg("exit 7").status();
    Child cat = Command("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn();
    const bool running = !cat.try_wait().has_value();
    cat.kill();
    const auto killed = co_await cat.wait();
    const auto out = co_await Command("echo").arg("piped").output();
    co_return seven.code() == 7 && running&& killed.signal() == SIGKILL&& out.stdout == "piped\n" &&
        spool_process_test::zombie_children().empty();
  }());
}

TEST(ProcessNoPidfdDeathTest, ChildrenAreWaitedForByAThreadEach) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        // As on Linux < 5.3.
        if (!spool_test::refuse_syscall(SYS_pidfd_open, ENOSYS)) std::_Exit(2);
        std::_Exit(children_work_without_pidfd() && !::testing::Test::HasFailure() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
