// IoDriver (src/driver/io/io_driver.hpp) over a scripted poller: what it does with a poller's
// last event for a registration — frees it once released, watches it again when the kernel
// ended the watch on its own (io_uring: a multishot poll ended by an overflow), and fails
// its operations when the watch failed or cannot be made again; and the holder's work,
// which a request only asks for and the next park runs.
#include "driver/io/io_driver.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/core/waker.hpp"

namespace {

using spool::detail::IoDriver;
using spool::detail::IoEvent;
using spool::detail::IoPoller;
using spool::detail::ScheduledIo;
using spool::detail::ThreadParker;

// Reports the events a test gives it, at the next wait; counts arms; can refuse them.
class ScriptedPoller final : public IoPoller {
 public:
  int arms = 0;
  bool refuse_arms = false;
  std::vector<IoEvent> next;

  void arm(ScheduledIo*, const char* what) override {
    if (refuse_arms) throw std::system_error(ENOMEM, std::generic_category(), what);
    ++arms;
  }
  bool disarm(ScheduledIo*) noexcept override { return false; }  // a last event follows
  void wait(const timespec*, std::vector<IoEvent>& out) override {
    out.insert(out.end(), next.begin(), next.end());
    next.clear();
  }
  void wake() noexcept override {}
};

class IoDriverTest : public ::testing::Test {
 protected:
  IoDriverTest()
      : driver_(std::make_shared<ThreadParker>(), spool::IoBackend::kIoUring, [this] {
          auto p = std::make_unique<ScriptedPoller>();
          poller_ = p.get();
          return p;
        }) {
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_), 0);
  }
  ~IoDriverTest() override {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  // One park that reports `e` (a zero timeout: the scripted poller never blocks anyway).
  void report(IoEvent e) {
    poller_->next.push_back(e);
    driver_.park(std::chrono::nanoseconds::zero());
  }
  // The registration's readiness bits, as a leaf waiting to read sees them (0: it waits).
  std::uint32_t read_bits(ScheduledIo* io) {
    auto r = io->poll_ready(*cx_, ScheduledIo::kReadMask, waiter_);
    return r.is_ready() ? r.value().bits : 0;
  }
  // A registration that has waited for reading (its first readiness used up).
  ScheduledIo* waiting_registration() {
    ScheduledIo* io = driver_.add(fds_[0], "test");
    io->clear_readiness(io->poll_ready(*cx_, ScheduledIo::kReadMask, waiter_).value(),
                        ScheduledIo::kReadable | ScheduledIo::kWritable);
    EXPECT_EQ(read_bits(io), 0u);
    return io;
  }

  IoDriver driver_;
  ScriptedPoller* poller_ = nullptr;
  int fds_[2] = {-1, -1};
  spool::Waker noop_ = spool::Waker::noop();
  std::unique_ptr<spool::Context> cx_ = std::make_unique<spool::Context>(noop_);
  spool::detail::IoWaiter waiter_;  // the leaf's (after driver_: it leaves first)
};

TEST_F(IoDriverTest, AWatchTheKernelEndedIsArmedAgainAndWakesBothDirections) {
  ScheduledIo* io = waiting_registration();
  EXPECT_EQ(poller_->arms, 1);
  report({io, 0, /*last=*/true, /*error=*/0});
  EXPECT_EQ(poller_->arms, 2);
  EXPECT_EQ(driver_.counters().rearms, 1u);
  EXPECT_NE(read_bits(io) & ScheduledIo::kReadable, 0u);  // the leaf tries its syscall again
  driver_.remove(io, nullptr);
  report({io, 0, true, 0});  // the removal's last event frees it (ASan: no leak, no reuse)
  EXPECT_EQ(driver_.counters().registered, 0u);
}

TEST_F(IoDriverTest, AWatchThatFailedFailsTheOperationsWithItsErrno) {
  ScheduledIo* io = waiting_registration();
  report({io, 0, true, ENOMEM});
  EXPECT_EQ(poller_->arms, 1);  // not armed again
  EXPECT_NE(read_bits(io) & ScheduledIo::kFailed, 0u);
  EXPECT_EQ(io->failure(), ENOMEM);
  driver_.remove(io, nullptr);
  report({io, 0, true, 0});
}

TEST_F(IoDriverTest, AWatchThatCannotBeMadeAgainFailsTheOperations) {
  ScheduledIo* io = waiting_registration();
  poller_->refuse_arms = true;
  report({io, 0, true, 0});
  EXPECT_NE(read_bits(io) & ScheduledIo::kFailed, 0u);
  EXPECT_EQ(io->failure(), ENOMEM);
  EXPECT_EQ(driver_.counters().rearms, 0u);
  driver_.remove(io, nullptr);
  report({io, 0, true, 0});
}

TEST_F(IoDriverTest, AReleasedRegistrationLivesUntilItsLastEvent) {
  ScheduledIo* io = waiting_registration();
  driver_.remove(io, nullptr);
  report({io, ScheduledIo::kReadable, false, 0});  // still reported: still alive
  report({io, 0, true, 0});
  EXPECT_EQ(poller_->arms, 1);  // released: freed, not armed again
}

// Requests (before the I/O layer is active: the park goes to the thread parker) only ask;
// the next park runs the work once for all of them, and a park without one runs nothing.
TEST_F(IoDriverTest, TheAfterWaitWorkRunsAtTheNextParkOnceForItsRequests) {
  int runs = 0;
  driver_.set_after_wait_work([&] { ++runs; });
  driver_.request_after_wait_work();
  driver_.request_after_wait_work();
  EXPECT_EQ(runs, 0);
  driver_.park(std::chrono::nanoseconds::zero());
  EXPECT_EQ(runs, 1);
  driver_.park(std::chrono::nanoseconds::zero());
  EXPECT_EQ(runs, 1);
  EXPECT_THROW(driver_.set_after_wait_work([] {}), std::logic_error);
}

// A request made while the work runs (the pump's own registration may wake its waker) runs
// it again at the next park, not inside the run.
TEST_F(IoDriverTest, ARequestDuringTheAfterWaitWorkRunsItAtTheNextPark) {
  ScheduledIo* io = waiting_registration();  // the layer is active: parks wait in the poller
  int runs = 0;
  driver_.set_after_wait_work([&] {
    if (++runs == 1) driver_.request_after_wait_work();
  });
  driver_.request_after_wait_work();
  driver_.park(std::chrono::nanoseconds::zero());
  EXPECT_EQ(runs, 1);
  driver_.park(std::chrono::nanoseconds::zero());
  EXPECT_EQ(runs, 2);
  driver_.remove(io, nullptr);
  report({io, 0, true, 0});
}

}  // namespace
