// The io_uring poller (src/driver/io/uring_poller.cpp): which thread submits a
// registration's poll. A thread that has waited on the ring (one that drives the runtime)
// submits its arms at once; any other thread hands them to the next wait, and a disarm
// before that wait takes them back without the kernel ever seeing them.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include "driver/io/io_poller.hpp"

namespace {

using spool::detail::IoEvent;
using spool::detail::IoPoller;
using spool::detail::ScheduledIo;

class UringPollerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      poller_ = spool::detail::make_uring_poller();
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "io_uring cannot run here: " << e.what();
    }
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_), 0);
    ASSERT_EQ(::write(fds_[1], "x", 1), 1);  // fds_[0] is readable from the start
    io_ = std::make_unique<ScheduledIo>(fds_[0]);
  }
  void TearDown() override {
    poller_.reset();  // first: the kernel forgets io_'s address
    io_.reset();
    if (fds_[0] >= 0) ::close(fds_[0]);
    if (fds_[1] >= 0) ::close(fds_[1]);
  }

  // The events that name io_ of one wait (which returns at once the first time: the wake
  // eventfd starts signalled; later ones at an event, or after a second as a guard).
  std::vector<IoEvent> wait_once() {
    static constexpr timespec kGuard{1, 0};
    std::vector<IoEvent> all;
    poller_->wait(&kGuard, all);
    std::vector<IoEvent> mine;
    std::copy_if(all.begin(), all.end(), std::back_inserter(mine),
                 [&](const IoEvent& e) { return e.io == io_.get(); });
    return mine;
  }
  // The first event for io_ of at most a few waits (a completion may be posted by the
  // task_work that ends the wait after it returned), or none.
  std::optional<IoEvent> next_event() {
    for (int i = 0; i < 3; ++i) {
      const std::vector<IoEvent> events = wait_once();
      if (!events.empty()) return events.front();
    }
    return std::nullopt;
  }

  // Runs `f` on a new thread, one that has never waited on the ring.
  template <class F>
  void on_another_thread(F f) {
    std::thread t(f);
    t.join();
  }

  std::unique_ptr<IoPoller> poller_;
  std::unique_ptr<ScheduledIo> io_;
  int fds_[2] = {-1, -1};
};

TEST_F(UringPollerTest, AnArmFromAThreadThatNeverWaitedIsSubmittedByTheNextWait) {
  on_another_thread([&] { poller_->arm(io_.get(), "test: arm"); });
  const std::optional<IoEvent> ready = next_event();
  ASSERT_TRUE(ready.has_value());
  EXPECT_NE(ready->bits & ScheduledIo::kReadable, 0U);
  EXPECT_FALSE(ready->last);  // the poll lives on (were it the arming thread's, its exit
                              // could have ended it)
  // Submitted now: the kernel holds the address until the poll's last completion.
  EXPECT_FALSE(poller_->disarm(io_.get()));
  const std::optional<IoEvent> last = next_event();
  ASSERT_TRUE(last.has_value());
  EXPECT_TRUE(last->last);
  EXPECT_EQ(last->error, 0);
}

TEST_F(UringPollerTest, MoreHandedOverArmsThanTheSubmissionQueueHoldsAreAllSubmitted) {
  // 300 registrations of the same readable fd (the queue has 256 entries).
  std::vector<std::unique_ptr<ScheduledIo>> ios;
  for (int i = 0; i < 300; ++i) ios.push_back(std::make_unique<ScheduledIo>(fds_[0]));
  on_another_thread([&] {
    for (auto& io : ios) poller_->arm(io.get(), "test: arm");
  });
  std::set<ScheduledIo*> seen;
  for (int i = 0; i < 5 && seen.size() < ios.size(); ++i) {
    static constexpr timespec kGuard{1, 0};
    std::vector<IoEvent> events;
    poller_->wait(&kGuard, events);
    for (const IoEvent& e : events) seen.insert(e.io);
  }
  EXPECT_EQ(seen.size(), ios.size());
  poller_.reset();  // before the registrations it names
}

// The hand-over wakes a holder asleep in a wait without a timeout: it submits the poll,
// which then reports the socket. (Were the wake lost, the holder would sleep for ever, and
// the test time out, whenever the arm comes after it fell asleep.)
TEST_F(UringPollerTest, AHandedOverArmWakesTheHolder) {
  EXPECT_TRUE(wait_once().empty());  // the first wait returns at once
  bool reported = false;
  std::thread holder([&] {
    for (int i = 0; i < 3 && !reported; ++i) {
      std::vector<IoEvent> events;
      poller_->wait(nullptr, events);
      for (const IoEvent& e : events) reported = reported || e.io == io_.get();
    }
  });
  on_another_thread([&] { poller_->arm(io_.get(), "test: arm"); });
  holder.join();
  EXPECT_TRUE(reported);
}

// wake() ends a wait without a timeout, whichever thread calls it.
TEST_F(UringPollerTest, AWakeEndsAWaitWithoutATimeout) {
  EXPECT_TRUE(wait_once().empty());  // the first wait returns at once
  std::thread holder([&] {
    std::vector<IoEvent> events;
    poller_->wait(nullptr, events);
    EXPECT_TRUE(events.empty());  // a wake is consumed, not reported
  });
  on_another_thread([&] { poller_->wake(); });
  holder.join();
}

TEST_F(UringPollerTest, ADisarmBeforeTheNextWaitTakesAHandedOverArmBack) {
  bool freeable = false;
  on_another_thread([&] {
    poller_->arm(io_.get(), "test: arm");
    freeable = poller_->disarm(io_.get());
  });
  EXPECT_TRUE(freeable);             // the kernel never saw it
  EXPECT_TRUE(wait_once().empty());  // the socket is readable, yet nothing watches it
}

TEST_F(UringPollerTest, AThreadThatHasWaitedSubmitsItsArmsAtOnce) {
  EXPECT_TRUE(wait_once().empty());
  poller_->arm(io_.get(), "test: arm");
  EXPECT_FALSE(poller_->disarm(io_.get()));  // the kernel holds it already
  bool saw_last = false;
  for (int i = 0; i < 4 && !saw_last; ++i) {  // the readiness event, then the last one
    for (const IoEvent& e : wait_once()) saw_last = saw_last || e.last;
  }
  EXPECT_TRUE(saw_last);
}

}  // namespace
