// A child outlives the runtime its pidfd was registered with, and the pidfd cannot be
// registered again (a seccomp filter makes epoll_ctl fail, as a full epoll set would):
// the wait falls back to a thread of the child's own. If that thread cannot start either
// (an injected failure), the wait throws, and the dropped Child still hands the child to the
// orphan reaper: no zombie. Death tests: the filter stays in their process for good.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <system_error>

#include "process/orphan_reaper.hpp"
#include "spool/spool.hpp"
#include "support/process.hpp"
#include "support/seccomp.hpp"
#include "sync/thread.hpp"

namespace {

using spool::Runtime;
using spool::Task;
using spool::process::Child;
using spool::process::Command;
using spool::process::ExitStatus;
using spool::process::Stdio;

Runtime epoll_runtime() {
  return spool::Builder::current_thread().io_backend(spool::IoBackend::kEpoll).build();
}

// A `cat` spawned in a runtime that is gone now, its stdin's write end (a plain descriptor:
// cat exits once it is closed), and a pidfd of the test's own to see it exit.
struct Orphaned {
  std::optional<Child> cat;
  int stdin_fd = -1;
  int watcher = -1;
};

Orphaned cat_outliving_its_runtime() {
  Orphaned o;
  Runtime rt = epoll_runtime();
  o.cat.emplace(rt.block_on([]() -> Task<Child> {
    co_return Command("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn();
  }()));
  o.stdin_fd = o.cat->stdin->source().release();
  o.cat->stdin.reset();
  o.watcher = static_cast<int>(::syscall(SYS_pidfd_open, *o.cat->id(), 0));
  return o;
}

// A runtime whose driver is set up, then epoll_ctl refused: no pidfd registers any more.
Runtime runtime_refusing_registrations() {
  Runtime rt = epoll_runtime();
  rt.block_on([]() -> Task<void> {
    auto ends = spool::pipe();  // sets the driver up while epoll_ctl works
    co_return;
  }());
  if (!spool_test::refuse_syscall(SYS_epoll_ctl, ENOSPC)) std::_Exit(2);
  return rt;
}

bool waits_through_a_thread() {
  Orphaned o = cat_outliving_its_runtime();
  Runtime rt = runtime_refusing_registrations();
  // cat's input ends once the wait has polled (so the child cannot have exited before).
  auto close_after_a_poll = [](int fd) -> Task<void> {
    co_await spool::yield_now();
    ::close(fd);
  };
  const auto [s, none] =
      rt.block_on(spool::when_all(o.cat->wait(), close_after_a_poll(o.stdin_fd)));
  return s.success() && spool_process_test::zombie_children().empty();
}

bool dropped_after_both_failed_is_reaped() {
  Orphaned o = cat_outliving_its_runtime();
  Runtime rt = runtime_refusing_registrations();
  spool::detail::fail_thread_starts(0, 1);  // the exit watch's thread
  const bool threw = rt.block_on([](Child& cat) -> Task<bool> {
    try {
      (void)co_await cat.wait();
    } catch (const std::system_error& e) {
      co_return e.code() == std::errc::resource_unavailable_try_again;
    }
    co_return false;
  }(*o.cat));
  o.cat.reset();  // neither pidfd nor watch: the reaper takes it
  ::close(o.stdin_fd);
  pollfd exited{o.watcher, POLLIN, 0};
  const bool exits = ::poll(&exited, 1, 30'000) == 1;  // (a bound against a hang)
  spool::detail::OrphanReaper::instance().wait_idle();
  return threw && exits && spool_process_test::zombie_children().empty();
}

TEST(ChildFallbackDeathTest, APidfdThatCannotBeRegisteredAgainFallsBackToAThread) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(waits_through_a_thread() ? 0 : 1), ::testing::ExitedWithCode(0), "");
}

TEST(ChildFallbackDeathTest, AChildWithNeitherPidfdNorThreadIsStillReapedWhenDropped) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(dropped_after_both_failed_is_reaped() ? 0 : 1),
              ::testing::ExitedWithCode(0), "");
}

}  // namespace
