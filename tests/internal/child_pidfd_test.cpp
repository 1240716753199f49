// open_child_pidfd: a pidfd of our own child, and none of a process that is not our child
// — the case of a child reaped by someone else whose number the kernel gave to another
// process before spool's pidfd_open (here the test's parent process stands for that one).
#include "process/pidfd.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>

#include "spool/spool.hpp"

namespace {

using spool::detail::open_child_pidfd;
using spool::process::Child;
using spool::process::Command;
using spool::process::Stdio;

TEST(ChildPidfd, OurRunningChildGivesAPidfd) {
  spool::block_on([]() -> spool::Task<void> {
    Child cat = Command("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn();
    const int fd = open_child_pidfd(*cat.id());
    EXPECT_GE(fd, 0);
    ::close(fd);
    EXPECT_TRUE((co_await cat.wait()).success());
  }());
}

TEST(ChildPidfd, AProcessThatIsNotOurChildGivesNone) {
  errno = 0;
  EXPECT_EQ(open_child_pidfd(::getppid()), -1);
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
