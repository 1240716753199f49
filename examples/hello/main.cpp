// spool-hello: tasks, wakers, block_on and the reactor hook at work, narrated.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "signal.hpp"
#include "spool/spool.hpp"
#include "timer_reactor.hpp"

using namespace std::chrono_literals;

namespace {

void say(const std::string& line) { std::printf("  %s\n", line.c_str()); }

spool::Task<int> square(int x) { co_return x* x; }

spool::Task<int> one() { co_return 1; }

spool::Task<long> count_awaits(long n) {
  long total = 0;
  for (long i = 0; i < n; ++i) total += co_await one();
  co_return total;
}

spool::Task<int> sum_of_squares(int n) {
  int total = 0;
  for (int i = 1; i <= n; ++i) total += co_await square(i);  // nested Tasks, no stack growth
  co_return total;
}

// Counts how often the Waker passed to its poll is woken.
struct CountingWake {
  int wakes = 0;
  void wake() { ++wakes; }
};

// Wakes itself once during its first poll and returns pending: block_on must poll again.
struct SelfWaking {
  int polls = 0;
  spool::Poll<int> poll(spool::Context& cx) {
    if (++polls == 1) {
      cx.waker().wake_by_ref();
      return spool::pending;
    }
    return polls;
  }
};

}  // namespace

int main() {
  std::printf("1. A Task is a lazy coroutine and a Future\n");
  {
    spool::Task<int> t = sum_of_squares(10);
    auto counter = std::make_shared<CountingWake>();
    spool::Waker waker = spool::Waker::from(counter);
    spool::Context cx(waker);  // a hand-made executor: no reactor slot
    spool::Poll<int> p = t.poll(cx);
    say("polled sum_of_squares(10) by hand: " +
        (p.is_ready() ? std::to_string(p.value()) : std::string("pending")));
    say("1,000,000 co_awaits of Tasks that complete at once, on one stack: " +
        std::to_string(spool::block_on(count_awaits(1'000'000))));
  }

  std::printf("2. A wake during a poll causes exactly one more poll\n");
  {
    SelfWaking f;
    int result = spool::block_on(f);
    say("SelfWaking was polled " + std::to_string(result) + " times by block_on");
  }

  std::printf("3. A waker woken from another thread unparks block_on\n");
  {
    demo::Signal<std::string> signal;
    auto receive = signal.receive();
    std::thread sender([signal]() mutable { signal.send("hello from another thread"); });
    std::string got = spool::block_on(receive);
    sender.join();
    say("received \"" + got + "\" after " + std::to_string(receive.polls) + " poll(s)");
  }

  std::printf("4. The reactor hook: block_on parks in the future's own reactor\n");
  {
    auto reactor = std::make_shared<demo::TimerReactor>();
    auto program = [](std::shared_ptr<demo::TimerReactor> r) -> spool::Task<std::string> {
      co_await demo::Sleep(r, 20ms);
      co_return "timer fired";
    };
    std::string what = spool::block_on(program(reactor));
    say(what + "; block_on parked " + std::to_string(reactor->parks()) +
        " time(s) in TimerReactor::park (a timerfd + eventfd poll), not on a condition variable");

    auto other = std::make_shared<demo::TimerReactor>();
    auto two_reactors = [](std::shared_ptr<demo::TimerReactor> a,
                           std::shared_ptr<demo::TimerReactor> b) -> spool::Task<void> {
      co_await demo::Sleep(a, 1ms);  // installs a
      co_await demo::Sleep(b, 1ms);  // a different reactor: refused
    };
    try {
      spool::block_on(two_reactors(std::make_shared<demo::TimerReactor>(), other));
    } catch (const spool::ReactorConflict& e) {
      say(std::string("a second reactor in the same block_on is refused: ") + e.what());
    }
  }

  std::printf("5. Nested event loops are refused\n");
  {
    auto nested = []() -> spool::Task<void> {
      spool::block_on(square(2));  // misuse: block_on inside block_on
      co_return;
    };
    try {
      spool::block_on(nested());
    } catch (const spool::NestedEventLoop& e) {
      say(std::string("block_on inside block_on threw: ") + e.what());
    }
  }
  return 0;
}
