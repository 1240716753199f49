// console-demo: a program to look at with spool-console (docs/console.md). Named tasks on two
// levels: a ticker, a task that yields a thousand times between naps (the self_wake lint), a
// connection and a report that wait (the report on a complete-on-close channel: after 5 s, the
// never_drains lint).
//   console-demo SOCKET [SECONDS [stuck]]   serves SOCKET for SECONDS (default 60), then exits;
//                                           with `stuck`, two more tasks block both workers
//                                           (the console still answers: docs/console.md),
//                                           and after 2 s it prints Runtime::dump()
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "spool/spool.hpp"

namespace {

spool::Task<void> ticker() {
  for (;;) co_await spool::sleep(std::chrono::milliseconds(100));
}

spool::Task<void> spinner() {
  for (;;) {
    for (int i = 0; i < 1000; ++i) co_await spool::yield_now();
    co_await spool::sleep(std::chrono::milliseconds(100));
  }
}

spool::Task<void> waits(spool::oneshot::Receiver<int> rx) { (void)co_await std::move(rx); }

// Blocks its worker for `seconds` inside one poll: the bug a console is for.
spool::Task<void> blocks(int seconds) {
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  co_return;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs("usage: console-demo SOCKET [SECONDS]\n", stderr);
    return 2;
  }
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 60;
  spool::Runtime rt = spool::Builder::multi_thread()
                          .worker_threads(2)
                          .levels({spool::Level{spool::Channel("ui")},
                                   spool::Level{spool::Channel("batch").complete_on_close()}})
                          .console(argv[1])
                          .build();
  std::vector<spool::oneshot::Sender<int>> senders;
  auto waiting = [&] {
    auto [tx, rx] = spool::oneshot::channel<int>();
    senders.push_back(std::move(tx));
    return waits(std::move(rx));
  };
  const auto ui = rt.channel("ui");
  const auto batch = rt.channel("batch");
  auto a = rt.spawn_on(ui, spool::named("ticker", ticker()));
  auto b = rt.spawn_on(batch, spool::named("spinner", spinner()));
  auto c = rt.spawn_on(ui, spool::named("conn 127.0.0.1:5412", waiting()));
  auto d = rt.spawn_on(batch, spool::named("report", waiting()));
  const bool stuck = argc > 3 && std::string(argv[3]) == "stuck";
  std::vector<spool::JoinHandle<void>> blockers;
  for (int i = 0; stuck && i < 2; ++i) {
    blockers.push_back(rt.spawn_on(ui, spool::named("blocking call", blocks(seconds))));
  }
  std::printf("console-demo: serving %s for %d s\n", argv[1], seconds);
  std::fflush(stdout);
  auto serving = std::chrono::seconds(seconds);
  if (stuck && seconds > 2) {
    // What the program itself can say while both workers are blocked (docs/observability.md).
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::printf("console-demo: Runtime::dump() after 2 s:\n%s", rt.dump().c_str());
    std::fflush(stdout);
    serving -= std::chrono::seconds(2);
  }
  rt.block_on(spool::sleep(serving));
  a.abort();
  b.abort();
  senders.clear();  // the waiting tasks end: the drain of "batch" completes
  return 0;
}
