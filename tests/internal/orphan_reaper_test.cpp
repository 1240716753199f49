// Children whose Child is dropped while they run: without kill_on_drop they run on, with it
// they are killed (though their stdin stays open); either way the orphan reaper's thread
// reaps them once they exit (OrphanReaper::wait_idle says when it has reaped them all). A
// process made by a plain fork() gets a reaper of its own, however the parent's was.
#include "process/orphan_reaper.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/process.hpp"
#include "support/rt_sanitizer.hpp"

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

// A wait that was pending when it was dropped (its task moved on: a timeout, a select),
// then the Child: the reaper still reaps the child once it exits.
TEST(OrphanReaper, AChildWhosePendingWaitWasDroppedIsReaped) {
  std::optional<Child> cat(Command("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn());
  DroppedCat c{std::move(*cat->stdin), static_cast<int>(::syscall(SYS_pidfd_open, *cat->id(), 0))};
  {
    auto wait = cat->wait();
    spool_test::HandPoller poller;
    EXPECT_TRUE(poller.poll(wait).is_pending());  // cat runs until its stdin closes
  }
  cat.reset();
  EXPECT_FALSE(exits_within(c.pidfd, 0));
  c.stdin_end.close();
  EXPECT_TRUE(exits_within(c.pidfd, 30'000));
  ::close(c.pidfd);
  OrphanReaper::instance().wait_idle();
  EXPECT_EQ(spool_process_test::zombie_children(), std::vector<pid_t>{});
}

// Runs `body` in a child process made by fork(): true if it returned true there. The child
// dies of SIGALRM if it hangs (a bound against a hang, not a measure).
template <class Body>
bool in_forked_child(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(30);
    ::_exit(body() ? 0 : 1);
  }
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Waits until this process's reaper thread sleeps in epoll_wait (its /proc syscall file names
// the call it blocks in). gcc 12's ASan does not lock its allocator around fork(): a fork
// while the thread, just started, still allocates leaves the child's allocator locked forever.
void wait_until_the_reaper_sleeps() {
  for (;;) {
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::string name;
      long syscall_nr = -1;
      std::getline(std::ifstream(task.path() / "comm"), name);
      std::ifstream(task.path() / "syscall") >> syscall_nr;  // ("running": stays -1)
#ifdef SYS_epoll_wait
      if (syscall_nr == SYS_epoll_wait) syscall_nr = SYS_epoll_pwait;
#endif
      if (name == "spool-reaper" && syscall_nr == SYS_epoll_pwait) return;
    }
    std::this_thread::yield();
  }
}

// The forked child drops a running child of its own and sees it reaped, while the parent's
// reaper (whose thread the fork did not copy) holds an orphan of the parent's.
TEST(OrphanReaperFork, AForkedProcessReapsItsOwnOrphans) {
  if (spool_rt_test::kUnderTsan) GTEST_SKIP() << "TSan refuses threads after a fork";
  std::vector<DroppedCat> parents = drop_running_cats(1, false);
  wait_until_the_reaper_sleeps();  // (the parent's reaper started with its orphan)
  // (ASSERT: after a failure here, the parent's own count may be wrong, and its wait hang.)
  ASSERT_TRUE(in_forked_child([] {
    auto rt = spool::Builder::current_thread().build();
    std::vector<DroppedCat> own = rt.block_on(
        []() -> spool::Task<std::vector<DroppedCat>> { co_return drop_running_cats(1, false); }());
    own[0].stdin_end.close();
    const bool exited = exits_within(own[0].pidfd, 30'000);
    OrphanReaper::instance().wait_idle();
    return exited && spool_process_test::zombie_children().empty();
  }));
  parents[0].stdin_end.close();
  EXPECT_TRUE(exits_within(parents[0].pidfd, 30'000));
  ::close(parents[0].pidfd);
  OrphanReaper::instance().wait_idle();
  EXPECT_EQ(spool_process_test::zombie_children(), std::vector<pid_t>{});
}

// Forks while another thread takes and drops the reaper's lock over and over: no child
// starts with the lock held by a thread it does not have.
TEST(OrphanReaperFork, AForkWhileTheLockIsTakenLeavesItFreeInTheChild) {
  OrphanReaper& reaper = OrphanReaper::instance();
  // Written by this thread (relaxed: only the flag's own value matters), read by the locker.
  std::atomic<bool> done{false};
  std::thread locker([&] {
    while (!done.load(std::memory_order_relaxed)) reaper.wait_idle();  // (nothing adopted)
  });
  int healthy = 0;
  constexpr int kForks = 50;
  for (int i = 0; i < kForks && healthy == i; ++i) {  // (up to the first that hung)
    healthy += in_forked_child([] {
      OrphanReaper::instance().wait_idle();
      return true;
    });
  }
  done.store(true, std::memory_order_relaxed);
  locker.join();
  EXPECT_EQ(healthy, kForks);
}

}  // namespace
