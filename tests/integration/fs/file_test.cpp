// spool::fs::File on a multi-thread runtime, a current-thread one and a foreign executor:
// every call, the options, positional I/O, and the misuse errors.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "spool/spool.hpp"
#include "support/fs.hpp"

namespace {

namespace fs = spool::fs;
using spool::Task;
using spool_fs_test::FsTest;
using spool_fs_test::pattern;

class FsFile : public FsTest {};
SPOOL_FS_INSTANTIATE(FsFile);

TEST_P(FsFile, WriteAllThenReadBackAtTheFilePosition) {
  const auto p = dir() / "a";
  const std::uint64_t ops_before = fs_ops();
  run([](std::filesystem::path p) -> Task<void> {
    const auto data = pattern(300'000);
    fs::File w = co_await fs::File::create(p);
    EXPECT_EQ(co_await w.write_all(data), data.size());
    co_await w.sync_all();
    co_await w.close();
    EXPECT_FALSE(w.is_open());
    fs::File r = co_await fs::File::open(p);
    EXPECT_EQ(r.path(), p);
    std::vector<std::byte> in(data.size());
    EXPECT_EQ(co_await r.read_exact(in), in.size());
    EXPECT_EQ(in, data);
    std::vector<std::byte> more(16);
    EXPECT_EQ(co_await r.read(more), 0u);  // the end
    EXPECT_EQ(co_await r.seek(-10, fs::SeekFrom::kEnd), data.size() - 10);
    EXPECT_EQ(co_await r.read(more), 10u);
    EXPECT_EQ((co_await r.metadata()).len(), data.size());
  }(p));
  // Each call was one blocking-pool job (the runtimes count them; foreign: no runtime) but the
  // reads, the open, the seek and the metadata: the file's bytes sat in the page cache, so the
  // three reads ran inline, and on a local file system its path and attributes sat in the
  // kernel's caches, and a seek waits for nothing (docs/fs.md, path 1).
  if (in_runtime()) {
    const unsigned open_seek_metadata = spool_fs_test::answered_from_the_cache(p) ? 0 : 3;
    EXPECT_EQ(fs_ops() - ops_before, 4u + open_seek_metadata);
  }
}

// A cached file on a local file system is opened, sized, read whole, sought and stat'ed on the
// polling thread, on every backend and runtime: no blocking-pool job, no ring operation
// (docs/fs.md, path 1).
TEST_P(FsFile, ACachedLocalFileIsReadWithNoHop) {
  const auto p = dir() / "a";
  std::ofstream(p) << "cached";
  SPOOL_SKIP_UNLESS_ANSWERED_FROM_THE_CACHE(p);
  const std::uint64_t ops_before = fs_ops();
  const std::size_t fds_before = spool_fs_test::open_fd_count();
  run([](std::filesystem::path p) -> Task<void> {
    EXPECT_EQ(co_await fs::read_to_string(p), "cached");
    fs::File f = co_await fs::File::open(p);
    std::string in(6, '\0');
    EXPECT_EQ(co_await f.read_exact(std::as_writable_bytes(std::span(in))), 6u);
    EXPECT_EQ(in, "cached");
    EXPECT_EQ(co_await f.seek(-2, fs::SeekFrom::kEnd), 4u);
    EXPECT_EQ((co_await f.metadata()).len(), 6u);
    EXPECT_EQ((co_await fs::symlink_metadata(p)).len(), 6u);
  }(p));
  if (in_runtime()) {
    EXPECT_EQ(fs_ops() - ops_before, 0u);
  }
  EXPECT_EQ(spool_fs_test::open_fd_count(), fds_before) << "a descriptor left open";
}

TEST_P(FsFile, PositionalCallsLeaveThePositionAlone) {
  run([](std::filesystem::path p) -> Task<void> {
    fs::File f = co_await fs::File::options().read(true).write(true).create(true).open(p);
    EXPECT_EQ(co_await f.write_at(std::string_view("world"), 6), 5u);
    EXPECT_EQ(co_await f.write_at(std::string_view("hello "), 0), 6u);
    EXPECT_EQ(co_await f.seek(0, fs::SeekFrom::kCurrent), 0u);
    std::string in(5, '\0');
    EXPECT_EQ(co_await f.read_at(in, 6), 5u);
    EXPECT_EQ(in, "world");
    EXPECT_EQ(co_await f.read_at(in, 11), 0u);               // past the end
    EXPECT_EQ(co_await f.write(std::string_view("J")), 1u);  // at position 0
    EXPECT_EQ(co_await fs::read_to_string(p), "Jello world");
  }(dir() / "p"));
}

TEST_P(FsFile, AppendTruncateCreateNewAndMode) {
  run([](std::filesystem::path p) -> Task<void> {
    co_await fs::write(p, std::string_view("abc"));
    {
      fs::File a = co_await fs::File::options().append(true).open(p);
      co_await a.write_all(std::string_view("def"));
      co_await a.write_at(std::string_view("g"), 0);  // Linux: O_APPEND wins
    }
    EXPECT_EQ(co_await fs::read_to_string(p), "abcdefg");
    (void)co_await fs::File::options().write(true).truncate(true).open(p);
    EXPECT_EQ((co_await fs::metadata(p)).len(), 0u);
    const auto q = p.parent_path() / "new";
    fs::File n = co_await fs::File::options().write(true).create_new(true).mode(0600).open(q);
    EXPECT_EQ((co_await n.metadata()).permissions().mode() & 0600, 0600u);
    EXPECT_EQ((co_await n.metadata()).permissions().mode() & 0077, 0u);
  }(dir() / "t"));
}

TEST_P(FsFile, SetLenSyncDataAndMetadata) {
  run([](std::filesystem::path p) -> Task<void> {
    fs::File f = co_await fs::File::create(p);
    co_await f.set_len(4096);
    co_await f.sync_data();
    const fs::Metadata m = co_await f.metadata();
    EXPECT_TRUE(m.is_file());
    EXPECT_FALSE(m.is_dir());
    EXPECT_EQ(m.len(), 4096u);
    EXPECT_EQ(m.nlink(), 1u);
    co_await f.set_len(10);
    EXPECT_EQ((co_await fs::metadata(p)).len(), 10u);
  }(dir() / "l"));
}

TEST_P(FsFile, AllocateReservesSpaceGrowingTheFileButNotChangingItsBytes) {
  run([](std::filesystem::path p) -> Task<void> {
    fs::File f = co_await fs::File::create(p);
    co_await f.write_all(std::string_view("abc"));
    co_await f.allocate(0, 8192);
    EXPECT_EQ((co_await f.metadata()).len(), 8192u);
    co_await f.allocate(100, 10);  // inside the file: its length stays
    co_await f.allocate(9000, 0);  // nothing
    EXPECT_EQ((co_await f.metadata()).len(), 8192u);
    const std::string bytes = co_await fs::read_to_string(p);
    EXPECT_EQ(bytes.substr(0, 3), "abc");
    EXPECT_EQ(bytes.find_first_not_of('\0', 3), std::string::npos);
    EXPECT_THROW(co_await f.allocate(1, std::numeric_limits<std::int64_t>::max()),
                 std::invalid_argument);
    fs::File reader = co_await fs::File::open(p);
    EXPECT_THROW(co_await reader.allocate(0, 1), std::system_error);
  }(dir() / "a"));
}

TEST_P(FsFile, OpenErrorsNameTheCallAndThePath) {
  const auto missing = dir() / "no" / "such";
  SPOOL_EXPECT_FS_ERROR(run(fs::File::open(missing)), ENOENT,
                        "spool::fs::open \"" + missing.string() + "\"");
  const auto p = dir() / "x";
  run(fs::write(p, std::string_view("x")));
  SPOOL_EXPECT_FS_ERROR(run(fs::File::create_new(p)), EEXIST,
                        "spool::fs::open \"" + p.string() + "\"");
  SPOOL_EXPECT_FS_ERROR(run(fs::File::create(dir())), EISDIR,
                        "spool::fs::open \"" + dir().string() + "\"");
}

TEST_P(FsFile, ReadExactPastTheEndIsUnexpectedEof) {
  const auto p = dir() / "short";
  run(fs::write(p, std::string_view("12345")));
  try {
    run([](std::filesystem::path p) -> Task<void> {
      fs::File f = co_await fs::File::open(p);
      std::string buf(8, '\0');
      co_await f.read_exact(buf);
    }(p));
    ADD_FAILURE() << "read_exact past the end did not throw";
  } catch (const spool::net::UnexpectedEof& e) {
    EXPECT_NE(std::string(e.what()).find("spool::fs::File::read_exact \"" + p.string() +
                                         "\": the file ended after 5 of the 8 bytes wanted"),
              std::string::npos)
        << e.what();
  }
}

TEST_P(FsFile, MisuseIsRefusedClearly) {
  const auto p = dir() / "m";
  run([](std::filesystem::path p) -> Task<void> {
    fs::File w = co_await fs::File::create(p);
    std::string buf(4, '\0');
    try {
      co_await w.read(buf);
      ADD_FAILURE() << "read of a write-only file did not throw";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::bad_file_descriptor);
      EXPECT_NE(std::string(e.what()).find("opened without read access"), std::string::npos);
    }
    fs::File r = co_await fs::File::open(p);
    try {
      co_await r.write(std::string_view("x"));
      ADD_FAILURE() << "write to a read-only file did not throw";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::bad_file_descriptor);
      EXPECT_NE(std::string(e.what()).find("opened without write access"), std::string::npos);
    }
    co_await r.close();
    EXPECT_THROW(co_await r.read(buf), std::logic_error);
    EXPECT_THROW(co_await r.close(), std::logic_error);
    fs::File none;
    EXPECT_THROW(co_await none.metadata(), std::logic_error);
    EXPECT_EQ(none.fd(), -1);
    fs::File moved = std::move(w);
    EXPECT_THROW(co_await w.sync_all(), std::logic_error);  // NOLINT(bugprone-use-after-move)
    EXPECT_THROW(co_await fs::OpenOptions().open(p), std::invalid_argument);
    EXPECT_THROW(co_await fs::OpenOptions().read(true).create(true).open(p), std::invalid_argument);
    EXPECT_THROW(co_await fs::OpenOptions().append(true).truncate(true).open(p),
                 std::invalid_argument);
    EXPECT_THROW((void)moved.read_at(buf, ~std::uint64_t{0}), std::invalid_argument);
  }(p));
}

// A child process inherits no File (O_CLOEXEC).
TEST_P(FsFile, TheDescriptorClosesOnExec) {
  const auto p = dir() / "e";
  run(fs::write(p, std::string_view("")));
  const fs::File f = run(fs::File::open(p));
  EXPECT_NE(::fcntl(f.fd(), F_GETFD) & FD_CLOEXEC, 0);
}

// A Task holds the file: it may outlive the File that made it (moved into a task or dropped).
TEST_P(FsFile, ATaskOutlivesItsFile) {
  const auto p = dir() / "o";
  run(fs::write(p, std::string_view("kept")));
  run([](std::filesystem::path p) -> Task<void> {
    std::string buf(4, '\0');
    Task<std::size_t> read = [&]() {
      fs::File f;
      return f.read(buf);  // not open: the Task throws when awaited, not here
    }();
    EXPECT_THROW(co_await std::move(read), std::logic_error);
    auto opened = std::make_unique<fs::File>(co_await fs::File::open(p));
    Task<std::size_t> later = opened->read(buf);
    opened.reset();
    EXPECT_EQ(co_await std::move(later), 4u);
    EXPECT_EQ(buf, "kept");
  }(p));
}

// The tests' eventually() gives up after its count of polls, saying so: a condition that
// never comes fails the test instead of hanging it.
TEST(FsTestSupport, EventuallyGivesUpAfterItsCountWithAMessage) {
  int polls = 0;
  const ::testing::AssertionResult never = spool_fs_test::eventually([&] {
    ++polls;
    return false;
  });
  EXPECT_FALSE(never);
  EXPECT_EQ(polls, spool_fs_test::kEventuallyPolls);
  EXPECT_EQ(std::string(never.message()), "the condition was still false after " +
                                              std::to_string(spool_fs_test::kEventuallyPolls) +
                                              " polls");
  polls = 0;
  EXPECT_TRUE(spool_fs_test::eventually([&] { return ++polls == 3; }));
  EXPECT_EQ(polls, 3);
}

// A read dropped while its job blocks on the pool (a FIFO with nothing in it), its buffer
// freed: the job, which reads into a buffer of its own, ends later without touching the
// caller's memory (ASan would report the write), and nothing leaks.
TEST(FsFileDrop, ADroppedReadWritesNothingIntoItsCallersBuffer) {
  const spool_fs_test::Fifo fifo_with_writer(true);
  const std::filesystem::path& fifo = fifo_with_writer.path();
  const int writer = fifo_with_writer.writer();
  {
    spool::Runtime rt = spool::Builder::multi_thread().worker_threads(1).build();
    rt.block_on([](std::filesystem::path fifo) -> Task<void> {
      // O_RDWR: the open waits for no writer; the read waits for bytes.
      fs::File f = co_await fs::File::options().read(true).write(true).open(fifo);
      auto buf = std::make_unique<std::string>(4, '\0');
      auto read = std::make_unique<Task<std::size_t>>(f.read(*buf));
      auto poll_once = spool::poll_fn([&](spool::Context& cx) {
        EXPECT_TRUE(read->poll(cx).is_pending());  // the job now blocks in read(2)
        return spool::Poll<void>::ready();
      });
      co_await poll_once;
      read.reset();
      buf.reset();
    }(fifo));
    ASSERT_EQ(::write(writer, "late", 4), 4);  // the dropped job's read returns now
    // The FIFO empties once the job has read; the runtime's shutdown then joins its thread.
    EXPECT_TRUE(spool_fs_test::eventually([&] {
      int queued = 0;
      return ::ioctl(writer, FIONREAD, &queued) == 0 && queued == 0;
    })) << "the dropped read's job never read the FIFO";
  }
}

// A close while a dropped read's job still blocks in read(2): the descriptor stays open for
// the job (the close leaves it to the job's end), then closes; TSan checks the ordering.
TEST(FsFileDrop, ACloseWaitsForADroppedReadsJob) {
  const spool_fs_test::Fifo fifo_with_writer(true);
  const std::filesystem::path& fifo = fifo_with_writer.path();
  const int writer = fifo_with_writer.writer();
  {
    spool::Runtime rt = spool::Builder::multi_thread().worker_threads(1).build();
    const int fd = rt.block_on([](std::filesystem::path fifo) -> Task<int> {
      fs::File f = co_await fs::File::options().read(true).write(true).open(fifo);
      const int fd = f.fd();
      std::string buf(4, '\0');
      auto read = std::make_unique<Task<std::size_t>>(f.read(buf));
      auto poll_once = spool::poll_fn([&](spool::Context& cx) {
        EXPECT_TRUE(read->poll(cx).is_pending());  // the job now blocks in read(2)
        return spool::Poll<void>::ready();
      });
      co_await poll_once;
      read.reset();
      co_await f.close();
      co_return fd;
    }(fifo));
    EXPECT_GE(::fcntl(fd, F_GETFD), 0) << "closed under the blocked read's job";
    ASSERT_EQ(::write(writer, "late", 4), 4);  // the dropped job's read returns now
  }  // the runtime's shutdown waits for the job, which closes the descriptor
}

// Under a foreign executor a call's job runs on a thread of its own, which sends the result.
// Its hold on the file must be gone by that send: a close awaited next would otherwise find
// the call in flight and leave the descriptor open (closed later, its error unreported).
// This executor makes the window certain: the wake that brings the read's result blocks
// its sender (the job's thread) until the close has been awaited.
TEST(FsFileForeign, ACloseAfterACallClosesTheDescriptor) {
  const spool_fs_test::Fifo fifo_with_writer(true);
  const std::filesystem::path& fifo = fifo_with_writer.path();
  const int writer = fifo_with_writer.writer();
  struct Executor {
    // Each flag is seq_cst, written on one side and read on the other: wakes by each wake
    // (a job's thread), read by the poll loop; reading and closed by the body (polled on
    // this thread), read by wake().
    std::atomic<int> wakes{0};
    std::atomic<bool> reading{false};  // the body awaits its read
    std::atomic<bool> closed{false};   // the body's close returned
    void wake() {
      const bool holds = reading.load();  // the read's result: hold its sender
      wakes.fetch_add(1);
      if (holds) (void)spool_fs_test::eventually([&] { return closed.load(); });
    }
  };
  auto ex = std::make_shared<Executor>();
  auto body = [](std::filesystem::path fifo, Executor& ex) -> Task<bool> {
    fs::File f = co_await fs::File::open(fifo);
    const int fd = f.fd();
    std::string buf(4, '\0');
    ex.reading = true;
    co_await f.read(buf);  // the job waits for the bytes the loop writes
    ex.reading = false;
    co_await f.close();
    const bool still_open = ::fcntl(fd, F_GETFD) >= 0;
    ex.closed = true;
    co_return !still_open;
  }(fifo, *ex);
  const spool::Waker waker = spool::Waker::from(ex);
  spool::Context cx(waker);
  bool written = false;
  for (int seen = 0;;) {
    auto done = body.poll(cx);
    if (done.is_ready()) {
      EXPECT_TRUE(done.value()) << "the close left the descriptor to the read's job";
      break;
    }
    if (ex->reading && !written) written = ::write(writer, "data", 4) == 4;
    ASSERT_TRUE(spool_fs_test::eventually([&] { return ex->wakes.load() > seen; }));
    seen = ex->wakes.load();
  }
}

// An open dropped while its job blocks (a FIFO's open waits for a writer): the descriptor
// the job opens later belongs to a result nobody collects, which closes it. The runtime's
// shutdown waits for the job, so the count after it is exact.
// Run twice: the open as a pool job (block_on's thread has no ring), and as an entry on a
// worker's ring (io_uring, a spawned task), which an uncollected answer closes just as well.
class FsFileDropOpen : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(, FsFileDropOpen, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Ring" : "Pool"; });

TEST_P(FsFileDropOpen, ADroppedOpenClosesTheFileItOpens) {
  const bool on_ring = GetParam();
  const spool_fs_test::Fifo no_writer(false);
  const std::filesystem::path& fifo = no_writer.path();
  const std::size_t fds_before = spool_fs_test::open_fd_count();  // the runtime's not yet made
  int writer = -1;
  {
    auto builder = spool::Builder::multi_thread().worker_threads(1);
    if (on_ring) builder.io_backend(spool::IoBackend::kIoUring);
    std::optional<spool::Runtime> rt;
    try {
      rt.emplace(builder.build());
    } catch (const std::system_error& e) {
      GTEST_SKIP() << "io_uring cannot run here: " << e.what();
    }
    const std::uint64_t ring_ops = rt->metrics().fs_ring_ops;
    auto drop_an_open = [](std::filesystem::path fifo) -> Task<void> {
      auto open = std::make_unique<Task<fs::File>>(fs::File::open(fifo));
      auto poll_once = spool::poll_fn([&](spool::Context& cx) {
        EXPECT_TRUE(open->poll(cx).is_pending());  // on the pool, or in the kernel for the ring
        return spool::Poll<void>::ready();
      });
      co_await poll_once;
      open.reset();
    };
    if (on_ring) {
      rt->block_on(rt->spawn(drop_an_open(fifo)));
      EXPECT_EQ(rt->metrics().fs_ring_ops - ring_ops, 1u);
    } else {
      rt->block_on(drop_an_open(fifo));
    }
    // A writer's O_NONBLOCK open fails with ENXIO until the dropped open, waiting in the
    // kernel (a pool thread's open(2), or the ring's openat in the kernel's worker), counts
    // as the FIFO's reader; it then lets that open end.
    int open_errno = 0;
    EXPECT_TRUE(spool_fs_test::eventually([&] {
      writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      open_errno = writer < 0 ? errno : 0;
      return open_errno != ENXIO;
    })) << "the dropped open never opened the FIFO";
    EXPECT_GE(writer, 0) << std::strerror(open_errno);
    // Failed: O_RDWR, which waits for no reader, lets the dropped open end whenever it
    // comes, so that the shutdown cannot wait on it for ever.
    if (writer < 0) writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  }  // the shutdown waits for the job or the ring, whose uncollected answer closes its fd
  ::close(writer);
  EXPECT_EQ(spool_fs_test::open_fd_count(), fds_before)
      << "the dropped open's descriptor (or the runtime's) was left open";
}

}  // namespace
