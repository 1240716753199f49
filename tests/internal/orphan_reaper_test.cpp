// Children whose Child is dropped while they run: without kill_on_drop they run on, with it
// they are killed (though their stdin stays open); either way the orphan reaper's thread
// reaps them once they exit (OrphanReaper::wait_idle says when it has reaped them all).
#include "process/orphan_reaper.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

#include "spool/spool.hpp"
#include "support/process.hpp"

namespace {

using spool::detail::OrphanReaper;
using spool::process::Child;
using spool::process::Command;
using spool::process::Stdio;

// A dropped cat: the write end of its stdin (kept open here) and a pidfd of the test's own,
// to see it exit without reaping it.
struct DroppedCat {
  spool::PipeWriter stdin_end;
  int pidfd;
};

std::vector<DroppedCat> drop_running_cats(int n, bool kill_on_drop) {
  std::vector<DroppedCat> cats;
  for (int i = 0; i < n; ++i) {
    Child cat = Command("cat")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .kill_on_drop(kill_on_drop)
                    .spawn();
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, *cat.id(), 0));
    EXPECT_GE(pidfd, 0);
    cats.push_back({std::move(*cat.stdin), pidfd});
  }  // each Child dropped here, its process running
  return cats;
}

// Whether the process of `pidfd` has exited within `ms` milliseconds (a bound against a
// hang, not a measure: the tests that expect an exit get it at once).
bool exits_within(int pidfd, int ms) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

TEST(OrphanReaper, DroppedChildrenRunOnAndAreReapedWhenTheyExit) {
  std::vector<DroppedCat> cats = drop_running_cats(100, false);
  for (const DroppedCat& c : cats) EXPECT_FALSE(exits_within(c.pidfd, 0));  // still running
  for (DroppedCat& c : cats) {
    c.stdin_end.close();  // the end of its input: it exits
    EXPECT_TRUE(exits_within(c.pidfd, 30'000));
    ::close(c.pidfd);
  }
  OrphanReaper::instance().wait_idle();
  EXPECT_EQ(spool_process_test::zombie_children(), std::vector<pid_t>{});
}

TEST(OrphanReaper, KillOnDropKillsThemAndTheyAreReaped) {
  std::vector<DroppedCat> cats = drop_running_cats(100, true);
  for (const DroppedCat& c : cats) {
    EXPECT_TRUE(exits_within(c.pidfd, 30'000));  // though its stdin is still open
    ::close(c.pidfd);
  }
  OrphanReaper::instance().wait_idle();
  EXPECT_EQ(spool_process_test::zombie_children(), std::vector<pid_t>{});
}

}  // namespace
