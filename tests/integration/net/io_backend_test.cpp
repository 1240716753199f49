// Builder::io_backend: each backend serves sockets and says so in the metrics; kAuto falls back
// to epoll where io_uring_setup is refused; kIoUring refused there is a clear error; a
// socket closed on another thread than its opener's still ends its stream. (What the driver
// does when the kernel ends a watch on its own: tests/internal/io_driver_test.cpp.)
// (The rest of net_tests runs on both backends: ctest runs it again under
// SPOOL_IO_BACKEND=io_uring.)
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/net.hpp"
#include "support/seccomp.hpp"

namespace {

using spool::Builder;
using spool::IoBackend;
using spool::Task;
using spool::net::TcpListener;
using spool::net::TcpStream;

// One echoed round trip over loopback on the calling runtime.
Task<std::string> echo_once(std::string_view msg) {
  auto listener = TcpListener::bind("127.0.0.1:0");
  auto client = co_await TcpStream::connect(listener.local_addr());
  auto [server, peer] = co_await listener.accept();
  auto echo = spool::spawn(spool_net_test::echo(std::move(server)));
  co_await client.write_all(msg);
  std::string back(msg.size(), '\0');
  co_await client.read_exact(back);
  client.shutdown();
  co_await echo;
  co_return back;
}

// The backend a runtime built with `b` runs, after one round trip on it.
IoBackend runs(Builder b) {
  auto rt = b.build();
  EXPECT_EQ(rt.block_on(echo_once("ping")), "ping");
  return rt.metrics().io_backend;
}

// Skips a test of the io_uring driver in a spool built without liburing.
#ifdef SPOOL_TEST_HAVE_IO_URING
#define SKIP_WITHOUT_IO_URING() (void)0
#else
#define SKIP_WITHOUT_IO_URING() GTEST_SKIP() << "spool was built without liburing"
#endif

class IoBackends : public ::testing::TestWithParam<bool> {
 protected:
  Builder builder() const {
    return GetParam() ? Builder::multi_thread().worker_threads(2) : Builder::current_thread();
  }
};
INSTANTIATE_TEST_SUITE_P(Flavors, IoBackends, ::testing::Values(true, false), [](const auto& info) {
  return std::string(info.param ? "MultiThread" : "CurrentThread");
});

TEST_P(IoBackends, EpollServesSocketsAndSaysSo) {
  EXPECT_EQ(runs(builder().io_backend(IoBackend::kEpoll)), IoBackend::kEpoll);
}

TEST_P(IoBackends, IoUringServesSocketsAndSaysSo) {
  SKIP_WITHOUT_IO_URING();
  EXPECT_EQ(runs(builder().io_backend(IoBackend::kIoUring)), IoBackend::kIoUring);
}

TEST_P(IoBackends, AutoTakesIoUringWhereTheKernelAllowsIt) {
  SKIP_WITHOUT_IO_URING();
  EXPECT_EQ(runs(builder().io_backend(IoBackend::kAuto)), IoBackend::kIoUring);
}

// The default follows SPOOL_IO_BACKEND (how ctest runs net_tests on io_uring), else epoll.
TEST_P(IoBackends, TheDefaultFollowsTheEnvironment) {
  const char* env = std::getenv("SPOOL_IO_BACKEND");
  const std::string_view name = env != nullptr && *env != '\0' ? env : "epoll";
  if (name != "epoll") SKIP_WITHOUT_IO_URING();
  EXPECT_EQ(spool::to_string(runs(builder())),
            name == "auto" ? std::string_view("io_uring") : name);
}

// Sets an environment variable for its lifetime, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(IoBackend, ABadEnvironmentValueIsAClearError) {
  const ScopedEnv env("SPOOL_IO_BACKEND", "kqueue");
  try {
    (void)Builder::current_thread().build();
    ADD_FAILURE() << "built with SPOOL_IO_BACKEND=kqueue";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("SPOOL_IO_BACKEND=kqueue: expected epoll, io_uring or auto"),
        std::string::npos)
        << e.what();
  }
}

// A socket closed on another thread than the one that opened it (io_uring: not the thread
// that submitted its poll, whose task_work completes the cancellation): the peer still sees
// the end of the stream.
TEST_P(IoBackends, ASocketClosedOnAnotherThreadEndsItsStream) {
  for (const IoBackend backend : {IoBackend::kEpoll, IoBackend::kIoUring}) {
    if (backend == IoBackend::kIoUring) SKIP_WITHOUT_IO_URING();
    auto rt = builder().io_backend(backend).build();
    auto listener =
        rt.block_on([]() -> Task<TcpListener> { co_return TcpListener::bind("127.0.0.1:0"); }());
    std::optional<TcpStream> client;
    rt.block_on([&]() -> Task<void> {  // this thread opens the client
      client.emplace(co_await TcpStream::connect(listener.local_addr()));
    }());
    std::thread([&] { client.reset(); }).join();  // another closes it
    EXPECT_EQ(rt.block_on([&]() -> Task<std::size_t> {
      auto [server, peer] = co_await listener.accept();
      std::array<char, 8> buf{};
      co_return co_await server.read(buf);
    }()),
              0u);
  }
}

// Makes io_uring_setup fail with EPERM in this process, as a container's seccomp profile does.
bool refuse_io_uring_setup() { return spool_test::refuse_syscall(__NR_io_uring_setup, EPERM); }

// In a child process (a death test): the filter stays there.
TEST(IoBackendDeathTest, AutoFallsBackToEpollWhereIoUringIsRefused) {
  SKIP_WITHOUT_IO_URING();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!refuse_io_uring_setup()) std::_Exit(2);
        const bool fell_back =
            runs(Builder::current_thread().io_backend(IoBackend::kAuto)) == IoBackend::kEpoll;
        std::_Exit(fell_back && !::testing::Test::HasFailure() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(IoBackendDeathTest, IoUringRefusedIsAClearError) {
  SKIP_WITHOUT_IO_URING();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (!refuse_io_uring_setup()) std::_Exit(2);
        try {
          (void)Builder::current_thread().io_backend(IoBackend::kIoUring).build();
        } catch (const std::system_error& e) {
          const std::string what = e.what();
          std::_Exit(e.code() == std::errc::operation_not_permitted &&
                             what.find("io_backend(kIoUring)") != std::string::npos &&
                             what.find("kAuto falls back to epoll") != std::string::npos
                         ? 0
                         : 3);
        }
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
