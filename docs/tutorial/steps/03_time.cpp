// Step 3: time — sleep, interval, timeout, and what cancelling by drop means.
#include <chrono>
#include <cstdio>
#include <string>

#include "spool/spool.hpp"

using namespace std::chrono_literals;

// Says when it is destroyed: a coroutine's locals are destroyed with its frame, whether
// the coroutine finished or not.
struct Announce {
  const char* name;
  ~Announce() { std::printf("%s: destroyed\n", name); }
};

spool::Task<std::string> quick_lookup() { co_return "found it"; }

spool::Task<std::string> slow_lookup() {
  Announce guard{"slow_lookup's frame"};
  co_await spool::sleep(1h);  // far longer than anyone waits for it
  co_return "found it, an hour later";
}

spool::Task<void> run() {
  spool::Instant start = spool::time::now();
  co_await spool::sleep(20ms);
  bool on_time = spool::time::now() - start >= 20ms;  // a timer never fires early
  std::printf("slept 20 ms: %s\n", on_time ? "yes" : "no");

  // An Interval ticks at once, then every period, on a fixed schedule.
  spool::Interval every = spool::interval(10ms);
  for (int i = 1; i <= 3; ++i) {
    co_await every.tick();
    std::printf("tick %d\n", i);
  }

  // timeout(d, f): f's value if it comes within d, else "elapsed". The inner future is
  // polled first: one that is ready at once never even arms the timer.
  auto quick = co_await spool::timeout(1s, quick_lookup());
  std::printf("quick: %s\n", quick.value().c_str());

  // When the deadline wins, the timeout destroys slow_lookup's Task then and there: that
  // is how a future is cancelled — it is dropped, and never polled again.
  auto slow = co_await spool::timeout(20ms, slow_lookup());
  std::printf("slow: %s\n", slow.elapsed() ? "timed out" : slow.value().c_str());
}

int main() {
  // A current-thread runtime: its tasks and timers all run on the thread in block_on.
  spool::Runtime rt = spool::Builder::current_thread().build();
  rt.block_on(run());
}
