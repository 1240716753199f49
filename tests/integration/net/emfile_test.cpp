// EMFILE in accept: with no descriptor left, accept backs off on a timer (no busy loop) and
// takes the connection once a descriptor is free.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/sync.hpp"

namespace {

using spool::Task;
using spool::net::SocketAddr;
using spool::net::TcpListener;

// The process runs out of file descriptors with a connection waiting: accept backs off on a
// timer (counted, no busy loop: each failed accept4 is followed by one back-off) and takes
// the connection once a descriptor is free.
TEST(TcpAccept, BacksOffOnEmfileAndAcceptsOnceADescriptorIsFree) {
#ifdef SPOOL_TEST_UBSAN_NEEDS_FDS
  GTEST_SKIP() << "UBSan's vptr check needs a free descriptor (it probes memory through a "
                  "pipe), so it aborts while none is left; this test runs in the other builds";
#endif
  auto rt = spool::Builder::multi_thread().worker_threads(1).build();
  auto listener =
      rt.block_on([]() -> Task<TcpListener> { co_return TcpListener::bind("127.0.0.1:0"); }());
  const SocketAddr addr = listener.local_addr();
  // Waiting in accept before the descriptors run out (with none left, even a sanitizer's
  // first look at a type may fail to open what it reads).
  auto server = rt.spawn([](TcpListener& l) -> Task<std::string> {
    auto [s, peer] = co_await l.accept();
    std::string in(4, '\0');
    co_await s.read_exact(in);
    co_return in;
  }(listener));
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Fill every descriptor below a lowered limit, then free one for the client's socket.
  rlimit low = saved;
  low.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> filler;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) filler.push_back(fd);
  ASSERT_EQ(errno, EMFILE);
  ::close(filler.back());
  filler.pop_back();
  // A blocking client (no descriptor is left for the runtime to register it).
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  ASSERT_EQ(::connect(client, addr.data(), addr.size()), 0);
  spool_test::spin_until([&] { return rt.metrics().io_accept_backoffs >= 3; });
  ::close(filler.back());
  filler.pop_back();
  ASSERT_EQ(::write(client, "ping", 4), 4);
  EXPECT_EQ(rt.block_on(std::move(server)), "ping");
  for (int fd : filler) ::close(fd);
  ::close(client);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
}

}  // namespace
