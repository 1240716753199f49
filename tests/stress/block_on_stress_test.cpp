// block_on under real races: several threads run block_on at once on separate futures,
// woken from other threads, with and without a reactor hook, directly and through Tasks.
// Every round is a fresh block_on (a fresh waker) waiting on a long-lived leaf, so the
// leaf must store the latest waker each time. Meant to run under ThreadSanitizer too.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/eventfd_reactor.hpp"

namespace {

using spool::Context;
using spool::Poll;
using spool_test::EventfdReactor;

// A counter that one thread raises and another waits on (through a leaf future).
struct Mailbox {
  // Written by post() (release store, then waker.wake()); read by WaitFor::poll (acquire
  // load, after register_waker), which pairs with that store; a post the load misses wakes
  // the registered waker. The test's final seq_cst loads come after join(), which orders them.
  std::atomic<std::uint64_t> count{0};
  spool::AtomicWaker waker;

  void post(std::uint64_t n) {
    count.store(n, std::memory_order_release);
    waker.wake();
  }
};

// Ready once `box.count >= target`. Registers the latest waker on every poll, then checks;
// installs `reactor` first when given one.
class WaitFor {
 public:
  WaitFor(Mailbox& box, std::uint64_t target, std::shared_ptr<EventfdReactor> reactor)
      : box_(box), target_(target), reactor_(std::move(reactor)) {}
  Poll<std::uint64_t> poll(Context& cx) {
    if (reactor_ && !cx.install_reactor(reactor_)) throw std::logic_error("reactor refused");
    box_.waker.register_waker(cx.waker());
    const std::uint64_t n = box_.count.load(std::memory_order_acquire);
    if (n >= target_) return n;
    return spool::pending;
  }

 private:
  Mailbox& box_;
  std::uint64_t target_;
  std::shared_ptr<EventfdReactor> reactor_;
};

spool::Task<std::uint64_t> wait_in_task(Mailbox& box, std::uint64_t target,
                                        std::shared_ptr<EventfdReactor> reactor) {
  co_return co_await WaitFor(box, target, std::move(reactor));
}

enum class Mode { kThreadPark, kReactor, kTaskWithReactor };

// One side of a ping-pong: waits for round r in its own mailbox with a fresh block_on.
std::uint64_t wait_round(Mode mode, Mailbox& box, std::uint64_t r,
                         const std::shared_ptr<EventfdReactor>& reactor) {
  switch (mode) {
    case Mode::kThreadPark:
      return spool::block_on(WaitFor(box, r, nullptr));
    case Mode::kReactor:
      return spool::block_on(WaitFor(box, r, reactor));
    case Mode::kTaskWithReactor:
      return spool::block_on(wait_in_task(box, r, reactor));
  }
  return 0;
}

// A ping-pong between two threads: `ping` posts round r to `pong`, then waits for pong's
// answer; pong waits for round r, then answers. Each wait is a fresh block_on, which parks
// (on its thread parker, or in its thread's reactor) and is woken by the other thread.
// Returns the number of rounds whose wait returned an unexpected count (must be 0).
struct PingPong {
  PingPong(Mode ping, Mode pong, int n) : ping_mode(ping), pong_mode(pong), rounds(n) {}

  Mode ping_mode;
  Mode pong_mode;
  int rounds;

  Mailbox to_ping;
  Mailbox to_pong;
  // Written by run_ping and run_pong on their threads (seq_cst fetch_add); read by the test
  // (seq_cst load) after join(), which orders the adds before it (relaxed would suffice).
  std::atomic<int> wrong{0};
  std::shared_ptr<EventfdReactor> ping_reactor = std::make_shared<EventfdReactor>();
  std::shared_ptr<EventfdReactor> pong_reactor = std::make_shared<EventfdReactor>();

  void run_ping() {
    for (std::uint64_t r = 1; r <= static_cast<std::uint64_t>(rounds); ++r) {
      to_pong.post(r);
      if (wait_round(ping_mode, to_ping, r, ping_reactor) != r) wrong.fetch_add(1);
    }
  }
  void run_pong() {
    for (std::uint64_t r = 1; r <= static_cast<std::uint64_t>(rounds); ++r) {
      if (wait_round(pong_mode, to_pong, r, pong_reactor) != r) wrong.fetch_add(1);
      to_ping.post(r);
    }
  }
};

TEST(BlockOnStress, ManyThreadsRunBlockOnAtOnceOnSeparateFutures) {
  constexpr int kRounds = 20'000;
  // Three ping-pongs (six threads, each running one block_on after another) at once.
  std::vector<std::unique_ptr<PingPong>> games;
  games.push_back(std::make_unique<PingPong>(Mode::kThreadPark, Mode::kThreadPark, kRounds));
  games.push_back(std::make_unique<PingPong>(Mode::kReactor, Mode::kReactor, kRounds));
  games.push_back(std::make_unique<PingPong>(Mode::kTaskWithReactor, Mode::kThreadPark, kRounds));
  std::vector<std::thread> threads;
  for (auto& g : games) {
    threads.emplace_back([&g] { g->run_ping(); });
    threads.emplace_back([&g] { g->run_pong(); });
  }
  for (auto& t : threads) t.join();

  for (auto& g : games) {
    EXPECT_EQ(g->wrong.load(), 0);
    EXPECT_EQ(g->to_ping.count.load(), static_cast<std::uint64_t>(kRounds));
    EXPECT_EQ(g->to_pong.count.load(), static_cast<std::uint64_t>(kRounds));
  }
}

TEST(BlockOnStress, WakesRacingWithPollsAndParksAreNeverLost) {
  // A poster raises a counter step by step, waking after each step, while the waiting
  // thread's block_on polls and parks concurrently; the last wake must always get through.
  // Repeated with a fresh block_on (fresh waker) each time.
  constexpr int kRepeats = 500;
  constexpr std::uint64_t kSteps = 50;
  for (int mode = 0; mode < 2; ++mode) {
    auto reactor = mode == 1 ? std::make_shared<EventfdReactor>() : nullptr;
    for (int i = 0; i < kRepeats; ++i) {
      Mailbox box;
      std::thread poster([&box] {
        for (std::uint64_t s = 1; s <= kSteps; ++s) box.post(s);
      });
      EXPECT_EQ(spool::block_on(WaitFor(box, kSteps, reactor)), kSteps);
      poster.join();
    }
  }
}

}  // namespace
