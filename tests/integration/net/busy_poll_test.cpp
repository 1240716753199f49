// Builder::busy_poll: a runtime thread that runs out of tasks while sockets are open polls the
// I/O driver instead of parking; a task spawned from another thread and the shutdown end the
// poll at once; a negative budget is refused. (ctest runs these on both backends.)
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <latch>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "spool/core/poll_fn.hpp"
#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;
using spool::net::SocketAddr;
using spool::net::TcpListener;
using spool::net::TcpStream;

// Longer than any test: a poll that must end does so because of what ends it, not the budget.
constexpr auto kForever = std::chrono::hours(24);

// Holds each answer of an OutsideEcho back until the runtime's thread has parked since the
// last answer (or its connection), so that whether the thread parks does not depend on how
// soon an answer comes: a slow build (ASan) or a loaded machine may find the answer already
// there when its thread runs out of tasks. After kMaxYields yields without a park it holds
// nothing back any more (the test's park count then says what happened).
class ParkGate {
 public:
  explicit ParkGate(const std::atomic<int>& parks) : parks_(parks) {}
  // The echo thread, before its accept and before each answer: parks from now on count.
  void start() { seen_ = parks_.load(); }
  // The echo thread, before each answer.
  void hold() {
    for (int i = 0; !open_ && parks_.load() == seen_; ++i) {
      if (i == kMaxYields) open_ = true;
      std::this_thread::yield();
    }
  }

 private:
  static constexpr int kMaxYields = 10'000'000;
  const std::atomic<int>& parks_;
  int seen_ = 0;       // the echo thread's only
  bool open_ = false;  // the echo thread's only
};

// An echo server on a plain thread with blocking sockets, outside the runtime: each answer
// comes a moment after its request, never by the time the request's send returns (and,
// with a gate, only once the runtime's thread has parked).
class OutsideEcho {
 public:
  explicit OutsideEcho(ParkGate* gate = nullptr)
      : listener_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
        ::listen(listener_, 1) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("OutsideEcho: cannot listen on 127.0.0.1");
    }
    addr_ = SocketAddr(reinterpret_cast<const sockaddr*>(&a), len);
    thread_ = std::thread([fd = listener_, gate] {
      // Parks count from before the client can send anything (and below, from before each
      // answer goes out): the runtime's thread may read an answer, send its next request and
      // park before this thread runs again, and that park must count for the next hold.
      if (gate != nullptr) gate->start();
      const int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) return;  // the destructor shut the listener: nobody connected
      std::array<char, 256> buf{};
      ssize_t n;
      while ((n = ::recv(c, buf.data(), buf.size(), 0)) > 0) {
        if (gate != nullptr) {
          gate->hold();
          gate->start();
        }
        if (::send(c, buf.data(), static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
      }
      ::close(c);
    });
  }
  OutsideEcho(const OutsideEcho&) = delete;
  OutsideEcho& operator=(const OutsideEcho&) = delete;
  // Ends a pending accept; a connection ends when its client closes it.
  ~OutsideEcho() {
    ::shutdown(listener_, SHUT_RDWR);
    thread_.join();
    ::close(listener_);
  }
  const SocketAddr& addr() const { return addr_; }

 private:
  int listener_;
  SocketAddr addr_;
  std::thread thread_;
};

// The parks counted while `n` round trips go through `server`.
Task<int> parks_during_round_trips(const std::atomic<int>& parks, SocketAddr server, int n) {
  TcpStream s = co_await TcpStream::connect(server);
  const int before = parks.load();
  constexpr std::string_view kMessage = "message!";
  std::array<char, kMessage.size()> in{};
  for (int i = 0; i < n; ++i) {
    co_await s.write_all(kMessage);
    co_await s.read_exact(in);
  }
  co_return parks.load() - before;
}

class BusyPoll : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(BusyPoll);

// One thread runs every task (one worker, or the block_on caller); its parks are counted.
// `parks` protocol: incremented (seq_cst ++) by the on_thread_park hook and loaded (seq_cst)
// by parks_during_round_trips, both on that one runtime thread (the task runs there), so
// the counts it reads are exact; a ParkGate's echo thread loads it too (seq_cst), only to
// learn that it moved since its last load (a park it sees late only delays an answer).
spool::Runtime build_counting(spool::Builder builder, std::atomic<int>& parks,
                              std::chrono::nanoseconds busy_poll) {
  return builder.busy_poll(busy_poll).on_thread_park([&parks] { ++parks; }).build();
}

TEST_P(BusyPoll, AThreadOutOfTasksPollsTheSocketsInsteadOfParking) {
  OutsideEcho server;
  std::atomic<int> parks{0};
  auto rt = build_counting(builder(1), parks, kForever);
  EXPECT_EQ(wait(rt, rt.spawn(parks_during_round_trips(parks, server.addr(), 200))), 0);
}

// What the test above would see without busy polling. Multi-thread only: a current-thread
// runtime polls the driver after each batch of tasks, so whether its thread still parks
// depends on how soon the answer comes.
TEST(BusyPollOff, AWorkerOutOfTasksParksToWaitForTheSockets) {
  std::atomic<int> parks{0};
  ParkGate gate(parks);
  OutsideEcho server(&gate);
  auto rt = build_counting(spool_rt_test::flavor_builder(spool_rt_test::Flavor::kMultiThread, 1),
                           parks, std::chrono::nanoseconds::zero());
  EXPECT_GT(spool::block_on(rt.spawn(parks_during_round_trips(parks, server.addr(), 200))), 0);
}

// Holds a socket open, forever, with nothing else to do: the runtime's thread polls.
// `waiting` counts down as the accept first returns pending (its task is about to go idle).
Task<void> listen_forever(std::latch& waiting) {
  auto listener = TcpListener::bind("127.0.0.1:0");
  auto accept = listener.accept();
  bool told = false;
  co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
    if (accept.poll(cx).is_ready()) return true;  // (nobody connects)
    if (!std::exchange(told, true)) waiting.count_down();
    return spool::pending;
  });
}

TEST_P(BusyPoll, ATaskSpawnedFromAnotherThreadEndsThePoll) {
  auto rt = builder(1).busy_poll(kForever).build();
  std::latch waiting(1);
  (void)rt.spawn(listen_forever(waiting));
  auto [tx, rx] = spool::oneshot::channel<int>();
  // Spawned once the runtime's thread has a socket open and nothing to run (it polls, or is
  // about to): the spawn wakes no thread, since none is parked; the polling thread must see
  // the task itself.
  std::thread other([&rt, &waiting, tx = std::move(tx)]() mutable {
    waiting.wait();
    (void)rt.handle().spawn([](spool::oneshot::Sender<int> out) -> Task<void> {
      out.send(7);
      co_return;
    }(std::move(tx)));
  });
  EXPECT_EQ(wait(rt, std::move(rx)), 7);
  other.join();
}

TEST(BusyPollShutdown, TheShutdownEndsAWorkersPoll) {
  auto rt = spool::Builder::multi_thread().worker_threads(1).busy_poll(kForever).build();
  std::latch waiting(1);
  (void)rt.spawn(listen_forever(waiting));
  waiting.wait();
  // The worker polls with a socket open; the destructor's shutdown must end that: no hang.
}

// A worker that polls watches the other workers' queues too: a task pushed there wakes
// nobody (no worker is parked, and the poller counts as searching).
TEST(BusyPollWorkers, ATaskQueuedOnABlockedWorkerIsStolenByThePollingOne) {
  // Without the LIFO slot a spawned task goes to its spawner's queue, where it can be stolen.
  auto rt =
      spool::Builder::multi_thread().worker_threads(2).lifo_slot(false).busy_poll(kForever).build();
  // One worker runs `blocker`, which waits for `go` (blocking its worker, on purpose), then
  // spawns `child` onto its own queue and blocks until `child` ran.
  std::latch blocking(1);
  std::latch go(1);
  std::latch child_ran(1);
  auto blocker = rt.spawn([](std::latch& blocking, std::latch& go, std::latch& ran) -> Task<void> {
    blocking.count_down();
    go.wait();
    (void)spool::spawn([](std::latch& r) -> Task<void> {
      r.count_down();
      co_return;
    }(ran));
    ran.wait();
    co_return;
  }(blocking, go, child_ran));
  blocking.wait();
  // The other worker opens a socket and goes idle: with the driver free, it polls.
  std::latch waiting(1);
  (void)rt.spawn(listen_forever(waiting));
  waiting.wait();
  go.count_down();  // `child` now waits in the blocked worker's queue: only the poller can run it
  spool::block_on(std::move(blocker));
}

TEST(BusyPollMisuse, ANegativeBudgetIsRefused) {
  try {
    (void)spool::Builder::multi_thread().busy_poll(std::chrono::nanoseconds(-1)).build();
    FAIL() << "build() accepted a negative busy_poll";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string_view(e.what()).find("busy_poll"), std::string_view::npos) << e.what();
  }
}

}  // namespace
