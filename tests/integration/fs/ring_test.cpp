// spool::fs on the io_uring backend: a worker submits its tasks' file operations to a ring
// of its own (docs/fs.md, "The ring path"). Each operation the kernel offers runs there, not
// on the blocking pool; a read that waits (a FIFO) wakes its task when the kernel answers,
// even while every worker sleeps; a read dropped with its entry in flight leaves the kernel
// a buffer of its own (ASan); one still in flight when the runtime shuts down is cancelled.
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "../../support/fs.hpp"
#include "spool/spool.hpp"

namespace {

namespace fs = spool::fs;
using spool::Task;

// A multi-thread runtime on io_uring; nullopt where the kernel refuses io_uring.
std::optional<spool::Runtime> uring_runtime() {
  try {
    return spool::Builder::multi_thread()
        .worker_threads(2)
        .io_backend(spool::IoBackend::kIoUring)
        .build();
  } catch (const std::system_error&) {
    return std::nullopt;
  }
}

#define SPOOL_URING_RUNTIME(rt)                        \
  std::optional<spool::Runtime> rt = uring_runtime();  \
  if (!rt) GTEST_SKIP() << "io_uring cannot run here"; \
  static_assert(true)

TEST(FsRing, EachOperationTheKernelOffersRunsOnTheWorkersRing) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::TempDir dir;
  const auto before = rt->metrics();
  auto task = [](std::filesystem::path d) -> Task<std::string> {
    fs::File f = co_await fs::File::create(d / "a");    // openat
    co_await f.write_all(std::string_view("ring"));     // write
    co_await f.sync_all();                              // fsync
    co_await fs::rename(d / "a", d / "b");              // renameat
    co_await fs::create_dir(d / "sub");                 // mkdirat
    co_await fs::symlink(d / "b", d / "sym");           // symlinkat
    co_await fs::hard_link(d / "b", d / "hard");        // linkat
    co_await fs::remove_file(d / "sym");                // unlinkat
    co_await fs::remove_dir(d / "sub");                 // unlinkat, AT_REMOVEDIR
    co_return co_await fs::read_to_string(d / "hard");  // a whole job: the pool
  };
  EXPECT_EQ(rt->block_on(rt->spawn(task(dir.path()))), "ring");
  const auto after = rt->metrics();
  EXPECT_EQ(after.fs_ring_ops - before.fs_ring_ops, 9u);
  EXPECT_EQ(after.fs_blocking_ops - before.fs_blocking_ops, 1u);  // read_to_string
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "a"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "sub"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "sym"));
  EXPECT_EQ(std::filesystem::hard_link_count(dir.path() / "b"), 2u);
}

TEST(FsRing, AnErrorFromTheRingNamesTheCallAndThePath) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::TempDir dir;
  const auto missing = dir.path() / "missing";
  const auto before = rt->metrics().fs_ring_ops;
  // The error, as the task caught it: its code and its message.
  auto task = [](std::filesystem::path p) -> Task<std::pair<std::error_code, std::string>> {
    try {
      co_await fs::remove_file(p);
    } catch (const std::system_error& e) {
      co_return std::pair{e.code(), std::string(e.what())};
    }
    co_return std::pair{std::error_code(), std::string("no error")};
  };
  const auto [code, what] = rt->block_on(rt->spawn(task(missing)));
  EXPECT_EQ(code, std::errc::no_such_file_or_directory);
  EXPECT_NE(what.find("remove_file"), std::string::npos) << what;
  EXPECT_NE(what.find(missing.string()), std::string::npos) << what;
  EXPECT_EQ(rt->metrics().fs_ring_ops - before, 1u);
}

// The read waits on the ring (a FIFO: no data yet, so the page-cache attempt says EAGAIN);
// the workers then run out of work and park, the reading one with the driver watching its
// ring; the write completes the read, and the task gets the bytes.
TEST(FsRing, ARingReadThatWaitsWakesItsTaskWhenTheKernelAnswers) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::Fifo fifo(true);
  const auto before = rt->metrics();
  auto reader = [](std::filesystem::path p) -> Task<std::string> {
    fs::File f = co_await fs::File::options().read(true).write(true).open(p);
    std::string buf(4, '\0');
    co_await f.read_exact(buf);
    co_return buf;
  };
  spool::JoinHandle<std::string> h = rt->spawn(reader(fifo.path()));
  // Both the open and the read are on the ring before the write.
  ASSERT_TRUE(spool_fs_test::eventually(
      [&] { return rt->metrics().fs_ring_ops - before.fs_ring_ops == 2; }));
  ASSERT_EQ(::write(fifo.writer(), "wake", 4), 4);
  EXPECT_EQ(rt->block_on(std::move(h)), "wake");
  EXPECT_EQ(rt->metrics().fs_blocking_ops - before.fs_blocking_ops, 0u);
}

// A read dropped with its entry in flight: the kernel, answering later, writes into the
// operation's own buffer, never into the caller's (kept alive here to be checked; freed, it
// would be a write into freed memory), and the ring frees the operation then (LSan).
TEST(FsRing, ADroppedReadLeavesTheKernelABufferOfItsOwn) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::Fifo fifo(true);
  std::string callers(4, '\0');
  auto drop_a_read = [](std::filesystem::path p, std::string* buf) -> Task<void> {
    fs::File f = co_await fs::File::options().read(true).write(true).open(p);
    auto read = std::make_unique<Task<std::size_t>>(f.read(*buf));
    auto poll_once = spool::poll_fn([&](spool::Context& cx) {
      EXPECT_TRUE(read->poll(cx).is_pending());  // now in flight on this worker's ring
      return spool::Poll<void>::ready();
    });
    co_await poll_once;
    read.reset();
  };
  rt->block_on(rt->spawn(drop_a_read(fifo.path(), &callers)));
  ASSERT_EQ(::write(fifo.writer(), "late", 4), 4);  // the dropped read completes now
  EXPECT_TRUE(spool_fs_test::eventually([&] {
    int queued = 0;
    return ::ioctl(fifo.writer(), FIONREAD, &queued) == 0 && queued == 0;
  })) << "the dropped read never took the bytes";
  EXPECT_EQ(callers, std::string(4, '\0')) << "the kernel wrote into the caller's buffer";
}

// A read still waiting when the runtime shuts down: its worker's ring cancels it as the
// thread leaves, so the shutdown ends and nothing leaks (LSan).
TEST(FsRing, AReadInFlightAtShutdownIsCancelled) {
  const spool_fs_test::Fifo fifo(true);
  {
    SPOOL_URING_RUNTIME(rt);
    auto reader = [](std::filesystem::path p) -> Task<void> {
      fs::File f = co_await fs::File::options().read(true).write(true).open(p);
      std::string buf(4, '\0');
      co_await f.read(buf);  // never answered
    };
    const auto before = rt->metrics().fs_ring_ops;
    (void)rt->spawn(reader(fifo.path()));
    ASSERT_TRUE(spool_fs_test::eventually([&] { return rt->metrics().fs_ring_ops - before == 2; }));
  }  // the runtime's shutdown: the worker's ring cancels the read
  int queued = -1;
  ASSERT_EQ(::ioctl(fifo.writer(), FIONREAD, &queued), 0);
  EXPECT_EQ(queued, 0);
}

}  // namespace
