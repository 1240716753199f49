// spool::AsyncFd: an eventfd and a timerfd awaited on both runtime flavours, under
// spool::block_on and a foreign executor with no reactor slot (the background driver); the
// guard's clear_ready and try_io; release; and each misuse refused with a clear error.
// (ctest runs this binary again with SPOOL_IO_BACKEND=io_uring.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/time_helpers.hpp"

namespace {

using spool::AsyncFd;
using spool::Interest;
using spool::Task;

int make_eventfd() {
  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  return fd;
}

// Reads the eventfd's counter through the guard's try_io, awaiting readiness as long as it
// says EAGAIN; `waits` counts the EAGAINs (each cleared the readiness), and is notified so
// that the writer may write once the reader has found the counter empty.
Task<std::uint64_t> read_counter(AsyncFd& fd, std::atomic<int>& waits) {
  for (;;) {
    auto guard = co_await fd.readable();
    std::uint64_t value = 0;
    if (guard.try_io([&](int d) { return ::read(d, &value, sizeof value); })) co_return value;
    waits.fetch_add(1);
    waits.notify_all();
  }
}

// Writes `value` to the eventfd once the reader has waited (`waits` > 0).
std::thread write_after_wait(int fd, std::uint64_t value, std::atomic<int>& waits) {
  return std::thread([fd, value, &waits] {
    waits.wait(0);
    EXPECT_EQ(::write(fd, &value, sizeof value), 8);
  });
}

class AsyncFdFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(AsyncFdFlavor);

// A task waits for an eventfd another thread writes: woken by the driver, it reads the value.
TEST_P(AsyncFdFlavor, EventfdWakesAWaitingTask) {
  auto rt = build();
  std::atomic<int> waits{0};
  AsyncFd fd = rt.block_on([]() -> Task<AsyncFd> { co_return AsyncFd(make_eventfd()); }());
  auto reader = rt.spawn(read_counter(fd, waits));
  std::thread writer = write_after_wait(fd.fd(), 42, waits);
  EXPECT_EQ(wait(rt, std::move(reader)), 42u);
  writer.join();
  EXPECT_GE(waits.load(), 1);  // the counter was empty once: the read waited for the edge
}

// A timerfd armed for 1 ms: async_io reads its expiration count once it fires.
TEST_P(AsyncFdFlavor, TimerfdFires) {
  auto rt = build();
  const std::uint64_t expirations = rt.block_on([]() -> Task<std::uint64_t> {
    AsyncFd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    itimerspec spec{};
    spec.it_value.tv_nsec = 1'000'000;
    EXPECT_EQ(::timerfd_settime(timer.fd(), 0, &spec, nullptr), 0);
    std::uint64_t n = 0;
    co_await timer.async_io(Interest::kReadable, [&](int fd) { return ::read(fd, &n, sizeof n); });
    co_return n;
  }());
  EXPECT_EQ(expirations, 1u);
}

// Outside every runtime, an executor with no reactor slot: the process-wide driver's
// background thread reports the eventfd's edge.
TEST(AsyncFdForeign, EventfdUnderAnExecutorWithoutReactorSlot) {
  std::atomic<int> waits{0};
  AsyncFd fd(make_eventfd());
  auto reader = read_counter(fd, waits);
  std::thread writer = write_after_wait(fd.fd(), 7, waits);
  int pending_polls = 0;
  EXPECT_EQ(spool_time_test::run_foreign(reader, nullptr, &pending_polls), 7u);
  writer.join();
  EXPECT_GE(pending_polls, 1);
}

// spool::block_on parks in the driver of the AsyncFd it waits on.
TEST(AsyncFdForeign, TimerfdUnderBlockOn) {
  AsyncFd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  itimerspec spec{};
  spec.it_value.tv_nsec = 1'000'000;
  ASSERT_EQ(::timerfd_settime(timer.fd(), 0, &spec, nullptr), 0);
  auto guard = spool::block_on(timer.readable());
  std::uint64_t n = 0;
  // The first readable() is ready at once (a registration starts ready), so the read may
  // find the timer not yet expired: clear and wait for the edge.
  while (!guard.try_io([&](int fd) { return ::read(fd, &n, sizeof n); })) {
    guard = spool::block_on(timer.readable());
  }
  EXPECT_EQ(n, 1u);
}

// A guard dropped without clear_ready keeps the readiness; clear_ready makes the next
// await wait for a new edge (a write is one).
TEST(AsyncFdGuard, ClearReadyWaitsForTheNextEdge) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    AsyncFd fd(make_eventfd());
    const std::uint64_t one = 1;
    EXPECT_EQ(::write(fd.fd(), &one, sizeof one), 8);
    EXPECT_FALSE((co_await fd.readable()).closed());  // the guard is dropped: still ready
    auto guard = co_await fd.readable();
    std::uint64_t v = 0;
    EXPECT_EQ(guard.try_io([&](int d) { return ::read(d, &v, sizeof v); }), 8);
    EXPECT_FALSE(guard.try_io([&](int d) { return ::read(d, &v, sizeof v); }));  // cleared
    auto next = fd.readable();
    EXPECT_FALSE(co_await spool_time_test::poll_once(next));  // no edge since the clear
    EXPECT_EQ(::write(fd.fd(), &one, sizeof one), 8);
    auto woken = co_await next;  // the write's edge
    EXPECT_FALSE(woken.closed());
  }());
}

// try_io throws other errors, naming the descriptor.
TEST(AsyncFdGuard, TryIoThrowsOtherErrors) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    AsyncFd fd(make_eventfd());
    auto guard = co_await fd.writable();
    char small = 0;  // an eventfd write of fewer than 8 bytes is EINVAL
    try {
      (void)guard.try_io([&](int d) { return ::write(d, &small, 1); });
      ADD_FAILURE() << "try_io returned";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("descriptor " + std::to_string(fd.fd())),
                std::string::npos)
          << e.what();
    }
  }());
}

// release gives the descriptor back, open and unregistered: it can be registered again.
TEST(AsyncFdRelease, GivesBackAnOpenDescriptor) {
  AsyncFd fd(make_eventfd());
  const int raw = fd.release();
  EXPECT_EQ(fd.fd(), -1);
  EXPECT_GE(::fcntl(raw, F_GETFD), 0);
  AsyncFd again(raw);  // not a duplicate any more
  EXPECT_EQ(again.fd(), raw);
}

// A guard kept past its AsyncFd's release: clear_ready has nothing left to clear, and the
// descriptor given back is untouched.
TEST(AsyncFdGuard, ClearReadyAfterReleaseDoesNothing) {
  auto rt = spool::Builder::current_thread().build();
  const int raw = rt.block_on([]() -> Task<int> {
    AsyncFd fd(make_eventfd());
    auto guard = co_await fd.writable();
    const int given_back = fd.release();
    guard.clear_ready();
    co_return given_back;
  }());
  EXPECT_GE(::fcntl(raw, F_GETFD), 0);
  ::close(raw);
}

// The message of an std::invalid_argument thrown by AsyncFd(fd).
std::string refusal(int fd) {
  try {
    AsyncFd a(fd);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(AsyncFdMisuse, NegativeClosedBlockingAndRegularFilesAreRefused) {
  EXPECT_NE(refusal(-1).find("descriptor -1 is no descriptor"), std::string::npos);
  EXPECT_NE(refusal(1'000'000).find("is not open"), std::string::npos) << refusal(1'000'000);
  const int blocking = ::eventfd(0, EFD_CLOEXEC);
  EXPECT_NE(refusal(blocking).find("blocking mode"), std::string::npos) << refusal(blocking);
  EXPECT_GE(::fcntl(blocking, F_GETFD), 0);  // still open: the caller's
  ::close(blocking);
  char path[] = "/tmp/spool-async-fd-XXXXXX";
  const int file = ::mkstemp(path);
  ASSERT_GE(file, 0);
  ::unlink(path);
  ASSERT_EQ(::fcntl(file, F_SETFL, O_NONBLOCK), 0);
  EXPECT_NE(refusal(file).find("regular file"), std::string::npos) << refusal(file);
  ::close(file);
}

// A descriptor registered twice with one driver is refused (EEXIST) on both backends; the
// first registration keeps working.
TEST(AsyncFdMisuse, RegisteringTwiceIsRefused) {
  auto rt = spool::Builder::current_thread().build();
  rt.block_on([]() -> Task<void> {
    AsyncFd first(make_eventfd());
    try {
      AsyncFd second(first.fd());
      ADD_FAILURE() << "registered twice";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::file_exists);
      EXPECT_NE(std::string(e.what()).find("registered with this runtime's I/O driver already"),
                std::string::npos)
          << e.what();
    }
    const std::uint64_t one = 1;
    EXPECT_EQ(::write(first.fd(), &one, sizeof one), 8);
    std::uint64_t v = 0;
    EXPECT_EQ(co_await first.async_io(Interest::kReadable,
                                      [&](int d) { return ::read(d, &v, sizeof v); }),
              8);
  }());
}

}  // namespace
