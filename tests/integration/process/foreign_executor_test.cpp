// Children under executors that do not drive spool's driver, as the sockets: a twenty-line
// executor with no reactor slot (the process-wide driver's background thread reports the
// pidfd and the pipes), and spool::block_on outside every runtime. (tests/internal's
// child_fallback_test covers a wait whose pidfd cannot be registered again.)
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <string_view>
#include <thread>

#include "spool/spool.hpp"
#include "support/time_helpers.hpp"

namespace {

using spool::Task;
using spool::process::Child;
using spool::process::Command;
using spool::process::Output;
using spool::process::Stdio;

// A line through `cat`, then its exit code: the pipes and the exit all wait on the driver.
Task<std::string> cat_round_trip() {
  Child cat = Command("cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
  co_await cat.stdin->write_all(std::string_view("foreign\n"));
  Output o = co_await std::move(cat).wait_with_output();
  co_return o.stdout + o.status.to_string();
}

TEST(ProcessForeign, UnderAnExecutorWithoutReactorSlot) {
  auto task = cat_round_trip();
  int pending_polls = 0;
  EXPECT_EQ(spool_time_test::run_foreign(task, nullptr, &pending_polls), "foreign\nexit status 0");
  EXPECT_GE(pending_polls, 1);
}

// The exit alone: the child cannot exit before the wait has returned pending (its stdin
// closes only then), so the pidfd's readiness comes through the background driver.
TEST(ProcessForeign, AWaitUnderAnExecutorWithoutReactorSlot) {
  Child cat = Command("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn();
  spool::PipeWriter in = std::move(*cat.stdin);
  // Counted by run_foreign (seq_cst increments, then notify); waited on by the closer.
  std::atomic<int> pending{0};
  std::thread closer([&] {
    pending.wait(0);
    in.close();
  });
  auto wait = cat.wait();
  EXPECT_TRUE(spool_time_test::run_foreign(wait, nullptr, &pending).success());
  closer.join();
  EXPECT_GE(pending.load(), 1);
}

TEST(ProcessForeign, UnderBlockOn) {
  EXPECT_EQ(spool::block_on(cat_round_trip()), "foreign\nexit status 0");
  const auto s = spool::block_on(Command("sh").arg("-c").arg("exit 4").status());
  EXPECT_EQ(s.code(), 4);
}

}  // namespace
