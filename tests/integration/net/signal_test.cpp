// spool::signal: a signal sent to the process wakes the streams listening for it, on a
// runtime and under plain block_on; a recv waits for a new delivery; the default action can be
// restored after the first delivery; bad signal numbers are refused.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <stdexcept>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;

class SignalStream : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(SignalStream);

TEST_P(SignalStream, AKillToTheProcessWakesEveryStreamOfThatSignal) {
  auto rt = build();
  rt.block_on([]() -> Task<void> {
    spool::Signal a = spool::signal(SIGUSR1);
    spool::Signal b = spool::signal(SIGUSR1);
    auto waiter = spool::spawn([](spool::Signal& s) -> Task<int> {
      co_await s.recv();
      co_return 1;
    }(b));
    co_await spool::yield_now();
    EXPECT_EQ(::kill(::getpid(), SIGUSR1), 0);
    co_await a.recv();
    EXPECT_EQ(co_await waiter, 1);
  }());
}

// Under plain block_on: a delivery completes one recv, the next recv waits (no spurious
// completion), and a later delivery completes it.
TEST(SignalStreamAnyExecutor, EachRecvWaitsForADeliveryAfterThePreviousOne) {
  spool::Signal s = spool::signal(SIGUSR2);
  ASSERT_EQ(::raise(SIGUSR2), 0);
  spool::block_on(s.recv());  // a missed delivery hangs here (CTest's timeout)
  const spool::Waker noop = spool::Waker::noop();
  spool::Context cx(noop);
  auto next = s.recv();
  EXPECT_TRUE(next.poll(cx).is_pending()) << "a recv completed without a new delivery";
  ASSERT_EQ(::raise(SIGUSR2), 0);
  spool::block_on(std::move(next));
}

// A Signal is a spool::Stream of the signal's number: through spool::next, and merged with
// another signal's stream (each delivery comes out once, as its number).
TEST(SignalStreamAnyExecutor, IsAStreamOfTheSignalsNumber) {
  static_assert(spool::Stream<spool::Signal>);
  spool::Signal usr1 = spool::signal(SIGUSR1);
  ASSERT_EQ(::raise(SIGUSR1), 0);
  EXPECT_EQ(spool::block_on(spool::next(usr1)), SIGUSR1);
  auto both = spool::stream::merge(std::move(usr1), spool::signal(SIGUSR2));
  ASSERT_EQ(::raise(SIGUSR2), 0);
  EXPECT_EQ(spool::block_on(spool::next(both)), SIGUSR2);
  ASSERT_EQ(::raise(SIGUSR1), 0);
  EXPECT_EQ(spool::block_on(spool::next(both)), SIGUSR1);
}

// docs/io.md's recipe for a second Ctrl-C: once the first SIGINT was received, restoring the
// default action makes the next one end the process. In a child process (a death test).
TEST(SignalStreamDeathTest, RestoringTheDefaultAfterTheFirstSigintLetsTheSecondEndTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        spool::Signal sigint = spool::signal(SIGINT);
        if (::raise(SIGINT) != 0) std::_Exit(2);
        spool::block_on(sigint.recv());  // the first one: spool's handler, the process goes on
        std::signal(SIGINT, SIG_DFL);
        ::raise(SIGINT);  // the second one: the default action
        std::_Exit(1);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

// spool installs its handler once per signal and process: a Signal made after the default
// was restored does not install it again (docs/io.md says so).
TEST(SignalStreamDeathTest, ASignalMadeAfterTheDefaultWasRestoredLeavesTheDefault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        { spool::Signal first = spool::signal(SIGINT); }
        std::signal(SIGINT, SIG_DFL);
        spool::Signal again = spool::signal(SIGINT);
        ::raise(SIGINT);
        std::_Exit(1);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

TEST(SignalStreamAnyExecutor, AMovedFromSignalRefusesRecv) {
  spool::Signal a = spool::signal(SIGUSR2);
  spool::Signal b = std::move(a);
  EXPECT_THROW((void)a.recv(), std::logic_error);  // NOLINT(bugprone-use-after-move)
}

TEST(SignalStreamAnyExecutor, UncatchableAndInvalidSignalsAreRefused) {
  for (int bad : {SIGKILL, SIGSTOP, SIGSEGV, 0, -1, 65}) {
    EXPECT_THROW((void)spool::signal(bad), std::invalid_argument) << bad;
  }
}

}  // namespace
