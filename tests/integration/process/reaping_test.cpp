// No zombie is left: 1,000 short-lived children awaited from many tasks at once, children
// dropped after they exited; a child outlives the runtime it was spawned in and is still
// awaited. (Children dropped while they run — kill_on_drop or not — go to the orphan
// reaper, whose thread reaps them later: tests/internal/orphan_reaper_test.cpp, which can
// wait for it. Here they would leave zombies for a while, which the checks would see.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/process.hpp"

namespace {

using spool::Task;
using spool::process::Child;
using spool::process::Command;
using spool::process::ExitStatus;
using spool::process::Stdio;

TEST(ProcessReaping, AThousandShortLivedChildrenLeaveNoZombie) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  constexpr int kBatches = 20;
  constexpr int kPerBatch = 50;
  const int successes = rt.block_on([]() -> Task<int> {
    int ok = 0;
    for (int b = 0; b < kBatches; ++b) {
      std::vector<spool::JoinHandle<ExitStatus>> batch;
      for (int i = 0; i < kPerBatch; ++i) {
        batch.push_back(spool::spawn(
            []() -> Task<ExitStatus> { co_return co_await Command("true").status(); }()));
      }
      for (auto& h : batch) ok += (co_await std::move(h)).success() ? 1 : 0;
    }
    co_return ok;
  }());
  EXPECT_EQ(successes, kBatches * kPerBatch);
  EXPECT_EQ(spool_process_test::zombie_children(), std::vector<pid_t>{});
}

// A child that has exited when its Child is dropped is reaped by the drop itself.
TEST(ProcessReaping, ADroppedChildThatExitedIsReapedAtOnce) {
  for (int i = 0; i < 100; ++i) {
    std::optional<Child> child(Command("true").spawn());
    siginfo_t info{};
    // Waits for the exit, leaving the zombie (WNOWAIT) for the drop to reap.
    ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(*child->id()), &info, WEXITED | WNOWAIT), 0);
    child.reset();
  }
  EXPECT_EQ(spool_process_test::zombie_children(), std::vector<pid_t>{});
}

// A wait dropped while pending (its task moved on: a timeout, a select) leaves the child to
// the next wait, which reaps it: no zombie.
TEST(ProcessReaping, AWaitDroppedWhilePendingLeavesTheChildToTheNextWait) {
  Child cat = Command("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn();
  spool::PipeWriter in = std::move(*cat.stdin);
  {
    auto wait = cat.wait();
    spool_test::HandPoller poller;
    EXPECT_TRUE(poller.poll(wait).is_pending());  // cat runs until its stdin closes
  }
  in.close();
  EXPECT_TRUE(spool::block_on(cat.wait()).success());
  EXPECT_EQ(spool_process_test::zombie_children(), std::vector<pid_t>{});
}

// A child spawned in a runtime that is gone before the child exits: awaited afterwards
// under spool::block_on, whose driver takes over its pidfd. The child (`cat fifo`) exits
// only once a writer opens and closes the FIFO, which happens after the wait has polled.
TEST(ProcessReaping, AChildOutlivesItsRuntime) {
  const std::string fifo = "/tmp/spool-outlive-" + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::optional<Child> cat;
  {
    auto rt = spool::Builder::current_thread().build();
    cat.emplace(rt.block_on([](std::string path) -> Task<Child> {
      // (kill_on_drop: a failed check does not leave it blocked on the FIFO.)
      co_return Command("cat").arg(path).stdout(Stdio::null()).kill_on_drop(true).spawn();
    }(fifo)));
  }  // its pidfd was registered with this runtime's driver, which shuts down here
  auto close_fifo = [](std::string path) -> Task<void> {
    co_await spool::yield_now();                    // the wait has polled once
    const int fd = ::open(path.c_str(), O_WRONLY);  // (waits for cat to open it)
    EXPECT_GE(fd, 0);
    ::close(fd);  // cat reads the end and exits
  };
  auto [status, none] = spool::block_on(spool::when_all(cat->wait(), close_fifo(fifo)));
  EXPECT_TRUE(status.success());
  ::unlink(fifo.c_str());
  EXPECT_EQ(spool_process_test::zombie_children(), std::vector<pid_t>{});
}

}  // namespace
