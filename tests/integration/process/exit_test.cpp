// How a child ends, as spool::process sees it: exit codes, death by a signal, kill, try_wait,
// a process group of its own, and the errors of a program that cannot be started — on
// both runtime flavours. (ctest runs this binary again with SPOOL_IO_BACKEND=io_uring.)
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <system_error>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;
using spool::process::Child;
using spool::process::Command;
using spool::process::ExitStatus;
using spool::process::Stdio;

class ProcessExit : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(ProcessExit);

// The status of `cmd`, spawned by the task (so inside the runtime that runs it).
Task<ExitStatus> run(Command cmd) { co_return co_await cmd.status(); }

// The status of `sh -c script`.
Task<ExitStatus> sh(std::string script) { return run(Command("sh").arg("-c").arg(script)); }

TEST_P(ProcessExit, ExitCodes) {
  auto rt = build();
  const ExitStatus ok = wait(rt, rt.spawn(run(Command("true"))));
  EXPECT_TRUE(ok.success());
  EXPECT_EQ(ok.code(), 0);
  EXPECT_EQ(ok.signal(), std::nullopt);
  const ExitStatus seven = wait(rt, rt.spawn(sh("exit 7")));
  EXPECT_FALSE(seven.success());
  EXPECT_EQ(seven.code(), 7);
  EXPECT_EQ(seven.to_string(), "exit status 7");
}

TEST_P(ProcessExit, DeathByASignal) {
  auto rt = build();
  const ExitStatus s = wait(rt, rt.spawn(sh("kill -TERM $$")));
  EXPECT_FALSE(s.success());
  EXPECT_EQ(s.code(), std::nullopt);
  EXPECT_EQ(s.signal(), SIGTERM);
  EXPECT_NE(s.to_string().find("signal 15"), std::string::npos) << s.to_string();
}

// kill() ends a child that would otherwise run until its stdin closes; try_wait sees it
// running before, and the same status as wait after.
TEST_P(ProcessExit, KillAndTryWait) {
  auto rt = build();
  wait(rt, rt.spawn([]() -> Task<void> {
    Child cat = Command("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn();
    EXPECT_TRUE(cat.id().has_value());
    EXPECT_EQ(cat.try_wait(), std::nullopt);
    cat.kill();
    const ExitStatus s = co_await cat.wait();
    EXPECT_EQ(s.signal(), SIGKILL);
    EXPECT_EQ(cat.try_wait(), s);       // reaped: the same status, at once
    EXPECT_EQ(cat.id(), std::nullopt);  // and no pid any more
    cat.kill();                         // nothing to signal: no error
    EXPECT_EQ(co_await cat.wait(), s);
  }()));
}

// wait() closes stdin first, so a child that reads it to its end can exit.
TEST_P(ProcessExit, WaitClosesStdin) {
  auto rt = build();
  const ExitStatus s = wait(rt, rt.spawn([]() -> Task<ExitStatus> {
    Child cat = Command("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn();
    co_return co_await cat.wait();
  }()));
  EXPECT_TRUE(s.success());
}

// A Child moved away is empty: its wait, try_wait and kill say so, rather than wait for
// nothing, answer "still running" or signal nobody.
TEST(ProcessMisuse, WaitOnAMovedFromChildIsALogicError) {
  spool::block_on([]() -> Task<void> {
    Child first = Command("true").spawn();
    Child second = std::move(first);
    EXPECT_EQ(first.id(), std::nullopt);  // NOLINT(bugprone-use-after-move): the point
    try {
      (void)co_await first.wait();
      ADD_FAILURE() << "a moved-from Child was awaited";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find("moved-from Child"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)first.try_wait(), std::logic_error);  // NOLINT(bugprone-use-after-move)
    EXPECT_THROW(first.kill(), std::logic_error);
    EXPECT_TRUE((co_await second.wait()).success());
    Child third = std::move(second);                          // reaped, then moved: the same
    EXPECT_THROW((void)second.try_wait(), std::logic_error);  // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(third.try_wait()->success());
  }());
}

TEST(ProcessGroup, ZeroMakesANewGroupNamedAfterTheChild) {
  spool::block_on([]() -> Task<void> {
    Child cat = Command("cat").stdin(Stdio::piped()).process_group(0).spawn();
    const pid_t pid = *cat.id();
    EXPECT_EQ(::getpgid(pid), pid);
    EXPECT_NE(::getpgid(pid), ::getpgrp());
    EXPECT_TRUE((co_await cat.wait()).success());
  }());
  EXPECT_THROW((void)Command("cat").process_group(-1), std::invalid_argument);
}

// With SIGCHLD ignored the kernel reaps every child itself: a wait says so (ECHILD), before
// or after spool got a pidfd of the child, and kill then signals nothing.
TEST(ProcessReapedElsewhere, SigchldIgnoredMakesWaitThrowEchild) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction old {};
  ASSERT_EQ(::sigaction(SIGCHLD, &ignore, &old), 0);
  std::string message;
  spool::block_on([](std::string& message) -> Task<void> {
    Child child = Command("true").spawn();
    try {
      (void)co_await child.wait();
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::no_child_process);
      message = e.what();
    }
    child.kill();  // nothing to signal: no error
  }(message));
  ::sigaction(SIGCHLD, &old, nullptr);
  EXPECT_NE(message.find("someone else reaped the child"), std::string::npos) << message;
}

// The message of the std::system_error that spawning `cmd` throws ("" if it spawned).
std::string spawn_error(const Command& cmd, std::errc expected) {
  try {
    Child c = cmd.spawn();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << cmd.program() << " spawned";
  return "";
}

TEST(ProcessSpawnErrors, AMissingProgramNamesItAndTheErrno) {
  const std::string by_name =
      spawn_error(Command("spool-no-such-program"), std::errc::no_such_file_or_directory);
  EXPECT_NE(by_name.find("spool::process::Command::spawn(\"spool-no-such-program\")"),
            std::string::npos)
      << by_name;
  EXPECT_NE(by_name.find("No such file or directory"), std::string::npos) << by_name;
  const std::string by_path =
      spawn_error(Command("/nonexistent/prog"), std::errc::no_such_file_or_directory);
  EXPECT_NE(by_path.find("/nonexistent/prog"), std::string::npos) << by_path;
  // A file that is not executable: the exec itself fails, and posix_spawn says so.
  const std::string not_exec = spawn_error(Command("/etc/passwd"), std::errc::permission_denied);
  EXPECT_NE(not_exec.find("/etc/passwd"), std::string::npos) << not_exec;
  EXPECT_THROW(Command(""), std::invalid_argument);
}

}  // namespace
