// A spawn that fails starts no child: the parent's pipe ends are registered with the driver
// before posix_spawn, so a registration that fails (here: a seccomp filter makes epoll_ctl
// fail with ENOSPC, as a full epoll set would) throws before any process exists. Run in a
// child process (a death test), where the filter stays for good.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>
#include <vector>

#include "spool/spool.hpp"
#include "support/process.hpp"
#include "support/seccomp.hpp"

namespace {

using spool::Task;
using spool::process::Command;
using spool::process::Stdio;

// Spawns `sleep` with its stdout piped where epoll_ctl fails: true if the spawn threw ENOSPC
// and no child process exists.
bool failed_spawn_leaves_no_child() {
  // The epoll backend, whatever SPOOL_IO_BACKEND says: its registrations are epoll_ctl calls.
  auto rt = spool::Builder::current_thread().io_backend(spool::IoBackend::kEpoll).build();
  return rt.block_on([]() -> Task<bool> {
    { auto ends = spool::pipe(); }  // the driver is set up while epoll_ctl still works
    if (!spool_test::refuse_syscall(SYS_epoll_ctl, ENOSPC)) std::_Exit(2);
    bool threw_enospc = false;
    try {
      auto child = Command("sleep").arg("1000").stdout(Stdio::piped()).spawn();
    } catch (const std::system_error& e) {
      threw_enospc = e.code() == std::errc::no_space_on_device;
    }
    const std::vector<pid_t> left = spool_process_test::children();
    for (const pid_t pid : left) ::kill(pid, SIGKILL);  // (a failed check leaves no sleep)
    co_return threw_enospc&& left.empty();
  }());
}

TEST(ProcessSpawnFailureDeathTest, ARegistrationThatFailsStartsNoChild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(failed_spawn_leaves_no_child() ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

}  // namespace
