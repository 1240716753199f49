// w10-floor: W10 (tcp_echo) with no runtime at all — the floor under any runtime's figure on
// this machine. The same connections and round trips as W10 (64 loopback TCP connections,
// TCP_NODELAY on both ends, 2,000 round trips of 64 bytes each, connected before timing),
// served by two threads (W10's two workers) that each own both ends of half the
// connections, so that no wake-up ever crosses threads, with the fewest system calls each
// backend allows:
//   epoll:    level-triggered, a read only when the socket is readable (no EAGAIN), a send
//             straight away: per round trip two sends, two reads and a share of epoll_wait;
//   io_uring: every send and receive an entry of the thread's own ring
//             (SINGLE_ISSUER | DEFER_TASKRUN), submitted in one io_uring_enter per wait.
// Prints `RESULT floor <name> <median ns per round trip> ns/op` (median of BENCH_REPS runs,
// default 5), the name being spool-bench's for the backend: `tcp_echo` for epoll,
// `tcp_echo@io_uring`. Not a spool benchmark: scripts/compare-peers sets it beside spool's
// figure of the same name (docs/io.md).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef SPOOL_HAVE_LIBURING
#include <liburing.h>
#endif

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace {

constexpr int kConnections = 64;
constexpr int kRoundTrips = 2'000;
constexpr int kThreads = 2;
constexpr std::size_t kMessage = 64;

[[noreturn]] void fail(const char* what, int err) {
  throw std::system_error(err, std::system_category(), std::string("w10-floor: ") + what);
}

struct Connection {
  int client = -1;
  int server = -1;
};

// kConnections connected pairs on 127.0.0.1, TCP_NODELAY on both ends.
std::vector<Connection> connect_all() {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
      ::listen(listener, kConnections) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    fail("listen on 127.0.0.1", errno);
  }
  std::vector<Connection> conns(kConnections);
  const int one = 1;
  for (Connection& c : conns) {
    c.client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c.client < 0 || ::connect(c.client, reinterpret_cast<sockaddr*>(&a), len) != 0) {
      fail("connect", errno);
    }
    c.server = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (c.server < 0) fail("accept", errno);
    for (int fd : {c.client, c.server}) {
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
  }
  ::close(listener);
  return conns;
}

// The connections thread `t` owns.
std::vector<int> owned_by(int t) {
  std::vector<int> ids;
  for (int i = t; i < kConnections; i += kThreads) ids.push_back(i);
  return ids;
}

const std::array<char, kMessage> kPayload{};

void send_all(int fd, const char* data, std::size_t n) {
  if (::send(fd, data, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) fail("send", errno);
}

void run_epoll(const std::vector<Connection>& conns, int t) {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) fail("epoll_create1", errno);
  // data.u64: connection << 1 | (1 for its server end).
  std::array<std::size_t, kConnections> got{};
  std::array<int, kConnections> done_trips{};
  int clients_left = 0;
  for (int i : owned_by(t)) {
    for (int end = 0; end < 2; ++end) {
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.u64 = static_cast<std::uint64_t>(i) << 1 | static_cast<std::uint64_t>(end);
      if (::epoll_ctl(ep, EPOLL_CTL_ADD, end ? conns[i].server : conns[i].client, &e) != 0) {
        fail("epoll_ctl", errno);
      }
    }
    send_all(conns[i].client, kPayload.data(), kMessage);
    ++clients_left;
  }
  std::array<epoll_event, 128> events{};
  std::array<char, 4096> buf{};
  while (clients_left > 0) {
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), -1);
    if (n < 0 && errno != EINTR) fail("epoll_wait", errno);
    for (int k = 0; k < n; ++k) {
      const auto i = static_cast<int>(events[k].data.u64 >> 1);
      if (events[k].data.u64 & 1) {  // the server end: echo what came
        const ssize_t r = ::recv(conns[i].server, buf.data(), buf.size(), 0);
        if (r > 0) send_all(conns[i].server, buf.data(), static_cast<std::size_t>(r));
        continue;
      }
      const ssize_t r = ::recv(conns[i].client, buf.data(), kMessage - got[i], 0);
      if (r <= 0) fail("recv", r < 0 ? errno : ECONNRESET);
      got[i] += static_cast<std::size_t>(r);
      if (got[i] < kMessage) continue;
      got[i] = 0;
      if (++done_trips[i] < kRoundTrips) {
        send_all(conns[i].client, kPayload.data(), kMessage);
      } else {
        --clients_left;
      }
    }
  }
  ::close(ep);
}

#ifdef SPOOL_HAVE_LIBURING
enum Op : std::uint64_t { kClientSend, kClientRecv, kServerRecv, kServerSend };

void run_uring(const std::vector<Connection>& conns, int t) {
  io_uring ring{};
  io_uring_params p{};
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  if (const int r = io_uring_queue_init_params(256, &ring, &p); r < 0) fail("io_uring_setup", -r);
  std::array<std::array<char, kMessage>, kConnections> client_bufs{};
  std::array<std::array<char, 4096>, kConnections> server_bufs{};
  std::array<std::size_t, kConnections> got{};
  std::array<int, kConnections> done_trips{};
  std::array<int, kConnections> echoed{};  // bytes of each server end's send in flight
  auto queue = [&](Op op, int i, const void* data, std::size_t n) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (sqe == nullptr) fail("io_uring_get_sqe", EBUSY);
    const int fd = op == kClientSend || op == kClientRecv ? conns[i].client : conns[i].server;
    if (op == kClientSend || op == kServerSend) {
      io_uring_prep_send(sqe, fd, data, n, MSG_NOSIGNAL);
    } else {
      io_uring_prep_recv(sqe, fd, const_cast<void*>(data), n, 0);
    }
    io_uring_sqe_set_data64(sqe, static_cast<std::uint64_t>(i) << 2 | op);
  };
  int clients_left = 0;
  for (int i : owned_by(t)) {
    queue(kClientSend, i, kPayload.data(), kMessage);
    queue(kServerRecv, i, server_bufs[i].data(), server_bufs[i].size());
    ++clients_left;
  }
  while (clients_left > 0) {
    if (const int r = io_uring_submit_and_wait(&ring, 1); r < 0 && r != -EINTR) {
      fail("io_uring_enter", -r);
    }
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      const std::uint64_t tag = io_uring_cqe_get_data64(cqe);
      const auto i = static_cast<int>(tag >> 2);
      const int res = cqe->res;
      if (res < 0) fail("an io_uring send or receive", -res);
      switch (static_cast<Op>(tag & 3)) {
        case kClientSend:
          queue(kClientRecv, i, client_bufs[i].data(), kMessage);
          break;
        case kClientRecv:
          got[i] += static_cast<std::size_t>(res);
          if (res == 0) fail("recv", ECONNRESET);
          if (got[i] < kMessage) {
            queue(kClientRecv, i, client_bufs[i].data() + got[i], kMessage - got[i]);
          } else if (got[i] = 0; ++done_trips[i] < kRoundTrips) {
            queue(kClientSend, i, kPayload.data(), kMessage);
          } else {
            --clients_left;
          }
          break;
        case kServerRecv:  // the server end: echo what came
          if (res > 0) {
            queue(kServerSend, i, server_bufs[i].data(), static_cast<std::size_t>(res));
            echoed[i] = res;
          }
          break;
        case kServerSend:
          if (res != echoed[i]) fail("a short send (not expected of 64 bytes)", EMSGSIZE);
          queue(kServerRecv, i, server_bufs[i].data(), server_bufs[i].size());
          break;
      }
    }
    io_uring_cq_advance(&ring, seen);
  }
  io_uring_queue_exit(&ring);
}
#endif

// One timed run on `backend`: ns per round trip.
double run_once(std::string_view backend) {
  const std::vector<Connection> conns = connect_all();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  std::array<std::exception_ptr, kThreads> failures{};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&conns, &failures, t, backend] {
      try {
#ifdef SPOOL_HAVE_LIBURING
        if (backend == "io_uring") return run_uring(conns, t);
#endif
        (void)backend;  // (only io_uring's branch reads it)
        run_epoll(conns, t);
      } catch (...) {
        failures[t] = std::current_exception();  // rethrown by the caller, after the join
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  for (const Connection& c : conns) {
    ::close(c.client);
    ::close(c.server);
  }
  return std::chrono::duration<double, std::nano>(elapsed).count() /
         (static_cast<double>(kConnections) * kRoundTrips);
}

}  // namespace

int main(int argc, char** argv) {
  const char* reps_env = std::getenv("BENCH_REPS");
  const int reps = reps_env != nullptr ? std::max(1, std::atoi(reps_env)) : 5;
  std::vector<std::string_view> backends;
  for (int i = 1; i < argc; ++i) backends.emplace_back(argv[i]);
  if (backends.empty()) backends = {"epoll", "io_uring"};
  try {
    for (std::string_view backend : backends) {
#ifndef SPOOL_HAVE_LIBURING
      if (backend == "io_uring") {
        std::fprintf(stderr, "w10-floor: built without liburing: io_uring skipped\n");
        continue;
      }
#endif
      if (backend != "epoll" && backend != "io_uring") {
        std::fprintf(stderr, "usage: w10-floor [epoll] [io_uring]\n");
        return 2;
      }
      std::vector<double> runs;
      for (int r = 0; r < reps; ++r) runs.push_back(run_once(backend));
      std::sort(runs.begin(), runs.end());
      const char* name = backend == "epoll" ? "tcp_echo" : "tcp_echo@io_uring";
      std::printf("RESULT floor %s %.2f ns/op\n", name, runs[runs.size() / 2]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
