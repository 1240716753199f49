// The console's server (docs/console.md): owner-only socket, bad paths refused, the
// environment's path and its precedence, two subscribers, bad requests (an interval over a
// day), a client that half-closes after its request, a client that never reads stays
// within its buffer, a runtime whose worker is stuck still answers, no console no thread.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "console/server.hpp"
#include "console/snapshot.hpp"
#include "spool/spool.hpp"
#include "unit/console/console_client.hpp"

namespace {

using spool_console_test::Client;

// A fresh directory for sockets, removed with what it holds.
class TempDir {
 public:
  TempDir() {
    std::string t = "/tmp/spool-console-test-XXXXXX";
    path_ = ::mkdtemp(t.data());
  }
  ~TempDir() { (void)std::system(("rm -rf " + path_).c_str()); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Threads of this process named `name`.
int threads_named(const std::string& name) {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string c;
    std::getline(comm, c);
    n += c == name ? 1 : 0;
  }
  ::closedir(d);
  return n;
}

spool::console::Snapshot once(const std::string& path) {
  Client c(path);
  c.subscribe(0);
  const auto line = c.line();
  if (!line) throw std::runtime_error("no snapshot");
  EXPECT_FALSE(c.line().has_value()) << "--once: the server closes after one snapshot";
  return spool::console::snapshot_from_json(*line);
}

spool::Task<void> wait_on(spool::oneshot::Receiver<int> rx) { (void)co_await std::move(rx); }

TEST(ConsoleServer, ServesOwnerOnlyAndUnlinksAtShutdown) {
  TempDir dir;
  const std::string path = dir / "console.sock";
  auto [tx, rx] = spool::oneshot::channel<int>();
  {
    spool::Runtime rt = spool::Builder::multi_thread().worker_threads(1).console(path).build();
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    auto h = rt.spawn(spool::named("waiter", wait_on(std::move(rx))));
    const auto s = once(path);
    // The thread answered, so it has its name (it names itself as it starts).
    EXPECT_EQ(threads_named("spool-console"), 1);
    EXPECT_EQ(s.runtime.flavor, "multi_thread");
    EXPECT_EQ(s.workers.size(), 1u);
    ASSERT_EQ(s.tasks.size(), 1u);
    EXPECT_EQ(s.tasks[0].name, "waiter");
    EXPECT_EQ(s.tasks[0].id, h.id());
  }
  struct stat st {};
  EXPECT_NE(::lstat(path.c_str(), &st), 0) << "the shutdown unlinks the socket";
  EXPECT_EQ(threads_named("spool-console"), 0);
}

TEST(ConsoleServer, NoConsoleNoThread) {
  ::unsetenv("SPOOL_CONSOLE");
  spool::Runtime rt = spool::Builder::current_thread().build();
  EXPECT_EQ(threads_named("spool-console"), 0);
}

TEST(ConsoleServer, RefusesAPathThatIsNotASocket) {
  TempDir dir;
  const std::string path = dir / "file";
  std::ofstream(path) << "precious";
  try {
    (void)spool::Builder::current_thread().console(path).build();
    FAIL() << "build() accepted a regular file";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("exists and is not a socket"), std::string::npos)
        << e.what();
  }
  std::ifstream in(path);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "precious") << "the file is left alone";
  EXPECT_THROW((void)spool::Builder::current_thread().console(dir / "no/such/dir").build(),
               std::system_error);
  EXPECT_THROW((void)spool::Builder::current_thread().console(std::string(200, 'x')).build(),
               std::system_error);
}

TEST(ConsoleServer, ReplacesAStaleSocketAndRefusesALiveOne) {
  TempDir dir;
  const std::string path = dir / "console.sock";
  {
    spool::Runtime first = spool::Builder::current_thread().console(path).build();
    EXPECT_THROW((void)spool::Builder::current_thread().console(path).build(),
                 std::invalid_argument)
        << "a live console is not taken over";
  }
  // A socket file nobody listens on (a program that crashed left it).
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);
  spool::Runtime second = spool::Builder::current_thread().console(path).build();
  EXPECT_EQ(once(path).runtime.flavor, "current_thread");
}

TEST(ConsoleServer, EnvironmentPathAndItsPrecedence) {
  TempDir dir;
  const std::string env_path = dir / "env.sock";
  // Set for this test only, however it ends.
  struct EnvGuard {
    explicit EnvGuard(const std::string& v) { ::setenv("SPOOL_CONSOLE", v.c_str(), 1); }
    ~EnvGuard() { ::unsetenv("SPOOL_CONSOLE"); }
  } env(env_path);
  {
    spool::Runtime rt = spool::Builder::current_thread().build();
    EXPECT_EQ(once(env_path).runtime.flavor, "current_thread");
    // A second runtime finds the path taken: it runs, without a console.
    spool::Runtime other = spool::Builder::current_thread().build();
    EXPECT_EQ(threads_named("spool-console"), 1);
  }
  {
    spool::Runtime off = spool::Builder::current_thread().console("").build();
    EXPECT_EQ(threads_named("spool-console"), 0) << "console(\"\") overrides SPOOL_CONSOLE";
  }
  {
    const std::string own = dir / "own.sock";
    spool::Runtime rt = spool::Builder::current_thread().console(own).build();
    struct stat st {};
    EXPECT_EQ(::lstat(own.c_str(), &st), 0) << "console(path) overrides SPOOL_CONSOLE";
    EXPECT_NE(::lstat(env_path.c_str(), &st), 0);
  }
}

TEST(ConsoleServer, TwoSubscribersEachGetTheirOwnSnapshots) {
  TempDir dir;
  const std::string path = dir / "console.sock";
  spool::Runtime rt = spool::Builder::current_thread().console(path).build();
  Client a(path);
  Client b(path);
  a.subscribe(10);
  b.subscribe(20);
  for (std::uint64_t seq = 1; seq <= 3; ++seq) {
    for (Client* c : {&a, &b}) {
      const auto line = c->line();
      ASSERT_TRUE(line.has_value());
      EXPECT_EQ(spool::console::snapshot_from_json(*line).seq, seq);
    }
  }
}

TEST(ConsoleServer, RefusesAMalformedRequest) {
  TempDir dir;
  const std::string path = dir / "console.sock";
  spool::Runtime rt = spool::Builder::current_thread().console(path).build();
  Client c(path);
  c.send("{\"v\":2,\"interval_ms\":10}\n");
  const auto line = c.line();
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("\"error\""), std::string::npos) << *line;
  EXPECT_FALSE(c.line().has_value()) << "and closes";
}

// An interval_ms longer than a day is refused with the error line: unbounded, the next due
// time (now + interval) overflowed, and in release wrapped into the past, so that a snapshot
// went out at every pass of the server. A day is served.
TEST(ConsoleServer, RefusesAnIntervalLongerThanADay) {
  TempDir dir;
  const std::string path = dir / "console.sock";
  spool::Runtime rt = spool::Builder::current_thread().console(path).build();
  for (const char* interval : {"86400001", "10000000000000", "9223372036854775807"}) {
    Client c(path);
    c.send(std::string("{\"v\":1,\"interval_ms\":") + interval + "}\n");
    const auto line = c.line();
    ASSERT_TRUE(line.has_value());
    EXPECT_NE(line->find("\"error\""), std::string::npos) << *line;
    EXPECT_NE(line->find("from 0 to 86400000"), std::string::npos) << *line;
    EXPECT_FALSE(c.line().has_value()) << "and closes";
  }
  Client day(path);
  day.subscribe(86'400'000);
  const auto line = day.line();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(spool::console::snapshot_from_json(*line).seq, 1u);
}

// A client that shuts its write side down after its request (`nc -N`, socat) is served as
// one that does not: one snapshot for interval 0, snapshots until it closes for an interval.
// (It got nothing: the end of its input closed it before its first snapshot.) A request cut
// short by the shutdown gets the error line.
TEST(ConsoleServer, ServesAClientThatShutsItsWriteSideDownAfterItsRequest) {
  TempDir dir;
  const std::string path = dir / "console.sock";
  spool::Runtime rt = spool::Builder::current_thread().console(path).build();
  {
    Client c(path);
    c.subscribe(0);
    ASSERT_EQ(::shutdown(c.fd(), SHUT_WR), 0);
    const auto line = c.line();
    ASSERT_TRUE(line.has_value()) << "no snapshot";
    EXPECT_EQ(spool::console::snapshot_from_json(*line).seq, 1u);
    EXPECT_FALSE(c.line().has_value()) << "--once: the server closes after one snapshot";
  }
  {
    Client c(path);
    c.subscribe(10);
    ASSERT_EQ(::shutdown(c.fd(), SHUT_WR), 0);
    for (std::uint64_t seq = 1; seq <= 3; ++seq) {
      const auto line = c.line();
      ASSERT_TRUE(line.has_value());
      EXPECT_EQ(spool::console::snapshot_from_json(*line).seq, seq);
    }
  }
  Client cut(path);
  cut.send("{\"v\":1,\"interval_ms\":0}");
  ASSERT_EQ(::shutdown(cut.fd(), SHUT_WR), 0);
  const auto line = cut.line();
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("\"error\":\"the request ended without its newline\""), std::string::npos)
      << *line;
  EXPECT_FALSE(cut.line().has_value()) << "and closes";
}

// A half-closed subscriber waiting out a long interval is kept, and dropped as soon as it
// closes (its hang-up wakes the server; its input, at its end, is no longer polled).
TEST(ConsoleServer, DropsAHalfClosedSubscriberWhenItCloses) {
  TempDir dir;
  spool::console::ServerOptions options;
  options.path = dir / "console.sock";
  spool::console::Server server(options, spool::console::RuntimeFacts{"current_thread", {{}}}, [] {
    spool::console::Sample sample;
    sample.metrics.workers.resize(1);
    return sample;
  });
  {
    Client c(options.path);
    c.subscribe(86'400'000);
    ASSERT_EQ(::shutdown(c.fd(), SHUT_WR), 0);
    ASSERT_TRUE(c.line().has_value());
    EXPECT_EQ(server.stats().subscribers, 1u) << "served, so kept";
  }
  // Bounded by count (10 ms apart), not by time: the server's next pass is what is awaited.
  for (int round = 0; round < 1000 && server.stats().subscribers != 0; ++round) {
    pollfd never{-1, 0, 0};
    (void)::poll(&never, 1, 10);
  }
  EXPECT_EQ(server.stats().subscribers, 0u) << "a closed client is dropped at once";
}

// A client that subscribes and never reads: the server's buffer for it never holds more than
// its bound, snapshots beyond it are dropped and counted, and the runtime is not sampled for
// the snapshots it drops.
TEST(ConsoleServer, ClientThatNeverReadsStaysWithinTheBound) {
  TempDir dir;
  spool::console::ServerOptions options;
  options.path = dir / "console.sock";
  options.max_buffer = 64 * 1024;
  // Tasks enough for a snapshot of ~20 KB: the kernel's socket buffer fills after a few.
  spool::console::Sample sample;
  sample.metrics.workers.resize(1);
  for (std::uint64_t i = 1; i <= 200; ++i) {
    spool::TaskSnapshot t;
    t.id = i;
    t.name = "task number " + std::to_string(i);
    t.channel = "default";
    sample.tasks.push_back(t);
  }
  // Samples taken: incremented by the server's thread, read here (relaxed: a count).
  std::atomic<std::uint64_t> samples{0};
  spool::console::Server server(options, spool::console::RuntimeFacts{"current_thread", {{}}}, [&] {
    samples.fetch_add(1, std::memory_order_relaxed);
    return sample;
  });
  Client c(options.path);
  c.subscribe(10);
  // Bounded by count: each round waits for the server to drop one more (10 ms apart).
  for (int round = 0; round < 2000 && server.stats().snapshots_dropped < 50; ++round) {
    pollfd never{-1, 0, 0};
    (void)::poll(&never, 1, 10);  // let the server tick; the condition above is what is awaited
  }
  const std::uint64_t sampled = samples.load(std::memory_order_relaxed);  // (before the stats)
  const auto stats = server.stats();
  EXPECT_GE(stats.snapshots_dropped, 50u);
  // Each sample became a snapshot sent (one may be under way as `sampled` was read).
  EXPECT_LE(sampled, stats.snapshots_sent + 1) << "a snapshot that would be dropped was sampled";
  EXPECT_LE(stats.buffered_high_water, options.max_buffer);
  EXPECT_EQ(stats.subscribers, 1u) << "a slow client is kept, not dropped";
  // It reads at last: the next snapshot says how many it missed.
  std::optional<spool::console::Snapshot> last;
  while (auto line = c.line()) {
    last = spool::console::snapshot_from_json(*line);
    if (last->runtime.dropped_snapshots > 0) break;
  }
  ASSERT_TRUE(last.has_value());
  EXPECT_GT(last->runtime.dropped_snapshots, 0u);
}

// The console's own thread answers while the runtime's only worker is stuck in a poll.
TEST(ConsoleServer, AStuckRuntimeStillAnswers) {
  TempDir dir;
  const std::string path = dir / "console.sock";
  // Set by the test once it has looked; read by the stuck task in its loop (seq_cst both: a
  // flag, ordering nothing else).
  std::atomic<bool> release{false};
  // Set by the stuck task as its poll starts; read by the test before it looks (seq_cst).
  std::atomic<bool> entered{false};
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(1).console(path).build();
  auto h = rt.spawn(
      spool::named("stuck", [](std::atomic<bool>& go, std::atomic<bool>& in) -> spool::Task<void> {
        in.store(true);
        while (!go.load()) std::this_thread::yield();  // blocks its worker: what the console is for
        co_return;
      }(release, entered)));
  while (!entered.load()) std::this_thread::yield();
  const auto s = once(path);
  ASSERT_EQ(s.tasks.size(), 1u);
  EXPECT_EQ(s.tasks[0].state, "running");
  release.store(true);
  rt.block_on(std::move(h));
}

// Sets `flag` when destroyed: a task's local that says the task was cancelled.
struct SetOnDestroy {
  std::atomic<bool>* flag;
  ~SetOnDestroy() { flag->store(true); }
};

spool::Task<void> waits_holding(SetOnDestroy, spool::oneshot::Receiver<int> rx) {
  (void)co_await std::move(rx);
}

// The console serves during the drain of complete-on-close channels (a drain that hangs is
// when one looks), and stops with the shutdown once the drain is done.
TEST(ConsoleServer, ServesDuringTheDrainAndStopsAfterIt) {
  TempDir dir;
  const std::string path = dir / "console.sock";
  spool::Runtime rt = spool::Builder::multi_thread()
                          .worker_threads(1)
                          .levels({spool::Level{spool::Channel("other"),
                                                spool::Channel("batch").complete_on_close()}})
                          .console(path)
                          .build();
  // Set by the other channel's task's destructor as the drain cancels it; read by the test
  // (seq_cst: a flag).
  std::atomic<bool> drain_began{false};
  auto [other_tx, other_rx] = spool::oneshot::channel<int>();
  auto [batch_tx, batch_rx] = spool::oneshot::channel<int>();
  (void)rt.spawn_on(rt.channel("other"),
                    waits_holding(SetOnDestroy{&drain_began}, std::move(other_rx)));
  (void)rt.spawn_on(rt.channel("batch"), spool::named("report", wait_on(std::move(batch_rx))));
  std::thread shutdown([&] { (void)rt.shutdown_timeout(std::chrono::seconds(60)); });
  while (!drain_began.load()) std::this_thread::yield();
  // (The cancelled task may still be listed: its destructor runs before it leaves the list.)
  const auto s = once(path);
  EXPECT_TRUE(std::any_of(s.tasks.begin(), s.tasks.end(), [](const auto& t) {
    return t.name == "report";
  })) << "the drain waits for the report";
  batch_tx.send(0);  // the drain completes
  shutdown.join();
  struct stat st {};
  EXPECT_NE(::lstat(path.c_str(), &st), 0) << "the shutdown unlinked the socket";
}

}  // namespace
