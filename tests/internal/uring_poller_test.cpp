// The io_uring poller (src/driver/io/uring_poller.cpp): which thread submits a
// registration's poll. A thread that has waited on the ring (one that drives the runtime)
// submits its arms at once; any other thread hands them to the next wait, and a disarm
// before that wait takes them back without the kernel ever seeing them. And removals while
// the kernel refuses submissions: they wait for the next wait, and one that waited while
// its address was reused does not cancel the new registration's poll.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <utility>
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
      poller_ = spool::detail::make_uring_poller(options());
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "io_uring cannot run here: " << e.what();
    }
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds_), 0);
    ASSERT_EQ(::write(fds_[1], "x", 1), 1);  // fds_[0] is readable from the start
    io_ = std::make_unique<ScheduledIo>(fds_[0]);
  }
  virtual spool::detail::UringPollerOptions options() { return {}; }
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

  // What waits report for `io` until one reports its last event (kLast) or, if
  // `stop_at_readable`, a readable one (kReadable), or in 500 waits (guards of 10 ms: a
  // poll the kernel ends at its thread's exit ends a clock tick later).
  enum class Outcome { kLast, kReadable, kNothing };
  Outcome wait_for(const ScheduledIo* io, bool stop_at_readable) {
    for (int i = 0; i < 500; ++i) {
      std::vector<IoEvent> events;
      poller_->wait(&kShortGuard, events);
      bool readable = false;
      for (const IoEvent& e : events) {
        if (e.io == io && e.last) return Outcome::kLast;
        readable = readable || (e.io == io && (e.bits & ScheduledIo::kReadable) != 0);
      }
      if (readable && stop_at_readable) return Outcome::kReadable;
    }
    return Outcome::kNothing;
  }

  // Waits until a read of `fd` finds the end of the stream (its peer is closed: true), or
  // for 500 waits (10 ms each). The kernel lets a socket go once no poll holds it, in a
  // task_work of the poll's thread (which the waits run) or a kernel worker's.
  bool peer_sees_close(int fd) {
    char c;
    for (int i = 0; i < 500; ++i) {
      if (::read(fd, &c, 1) == 0) return true;
      std::vector<IoEvent> none;
      poller_->wait(&kShortGuard, none);
    }
    return false;
  }
  static constexpr timespec kShortGuard{0, 10'000'000};

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

// The hand-over wakes the thread in the driver asleep in a wait without a timeout: it submits the
// poll, which then reports the socket. (Were the wake lost, it would sleep for ever, and the test
// time out, whenever the arm comes after it fell asleep.)
TEST_F(UringPollerTest, AHandedOverArmWakesTheThreadInTheDriver) {
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

// A poller whose submissions the kernel refuses while refuse_ is set, and whose removals
// take the asynchronous path (IORING_OP_POLL_REMOVE) of kernels before 6.0.
class UringRemovalTest : public UringPollerTest {
 protected:
  spool::detail::UringPollerOptions options() override {
    return {[this] { return refuse_.load(); }, /*sync_cancel=*/false};
  }
  // Fills the submission queue with entries the kernel refuses (arms that fail, left as
  // no-ops), from this thread, which has waited: no removal can find an entry then.
  void fill_submission_queue() {
    refuse_ = true;
    for (int i = 0; i < 1000; ++i) {
      try {
        poller_->arm(&filler_, "test: fill");
      } catch (const std::system_error& e) {
        if (e.code().value() == EBUSY) return;  // no entry left
      }
    }
    FAIL() << "the submission queue never filled up";
  }

  // Set by the test thread, read by the poller's submit hook on the same thread: seq_cst,
  // the default, with no pairing needed.
  std::atomic<bool> refuse_{false};
  ScheduledIo filler_{-1};
};

// The removal of a socket's poll when the submission queue is full of refused entries
// waits, and the next wait submits it: the poll ends, and the kernel lets the socket go
// (its peer reads the end of the stream). Lost, the poll would keep the closed socket (and
// its registration) until the ring closed.
TEST_F(UringRemovalTest, ARemovalThatFindsTheQueueFullIsSubmittedByTheNextWait) {
  EXPECT_TRUE(wait_once().empty());  // this thread submits its arms at once from now on
  poller_->arm(io_.get(), "test: arm");
  fill_submission_queue();
  EXPECT_FALSE(poller_->disarm(io_.get()));  // a last event will come
  ::close(std::exchange(fds_[0], -1));       // only the poll holds the socket now
  char c;
  EXPECT_EQ(::read(fds_[1], &c, 1), -1);  // not closed yet
  refuse_ = false;
  EXPECT_EQ(wait_for(io_.get(), /*stop_at_readable=*/false), Outcome::kLast);
  EXPECT_TRUE(peer_sees_close(fds_[1]));
}

// A removal waits (the queue is full) while its poll ends on its own, and the address of its
// registration, freed then, goes to a new registration whose poll is submitted before the
// removal: the removal must not end the new poll (the generation in user_data).
TEST_F(UringRemovalTest, AWaitingRemovalDoesNotCancelTheNextRegistrationAtItsAddress) {
  EXPECT_TRUE(wait_once().empty());
  std::optional<ScheduledIo> slot(std::in_place, fds_[0]);  // one address, two registrations
  ScheduledIo* const first = &*slot;
  // The first poll is another thread's, which exits: the kernel ends it at its next wake-up.
  on_another_thread([&] {
    std::vector<IoEvent> none;
    static constexpr timespec kZero{0, 0};
    poller_->wait(&kZero, none);  // a thread that has waited submits its arms at once
    poller_->arm(first, "test: arm the first");
  });
  fill_submission_queue();
  EXPECT_FALSE(poller_->disarm(first));  // its removal waits
  ASSERT_EQ(::write(fds_[1], "y", 1), 1);
  ASSERT_EQ(wait_for(first, /*stop_at_readable=*/false),
            Outcome::kLast);  // the kernel ended it; the removal waits

  int other[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, other), 0);
  slot.emplace(other[0]);  // the freed registration's address, reused
  ScheduledIo* const second = &*slot;
  ASSERT_EQ(first, second);
  refuse_ = false;
  poller_->arm(second, "test: arm the second");  // submitted now, before the removal
  std::vector<IoEvent> events;
  poller_->wait(&kShortGuard, events);  // submits the removal
  ASSERT_EQ(::write(other[1], "z", 1), 1);
  const bool ended_at_once = std::any_of(
      events.begin(), events.end(), [&](const IoEvent& e) { return e.io == second && e.last; });
  EXPECT_FALSE(ended_at_once);
  if (!ended_at_once) {
    EXPECT_EQ(wait_for(second, /*stop_at_readable=*/true), Outcome::kReadable)
        << "the first registration's removal ended the second's poll";
  }
  poller_.reset();  // before the registration it names
  ::close(other[0]);
  ::close(other[1]);
}

}  // namespace
