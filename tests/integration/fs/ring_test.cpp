// spool::fs on the io_uring backend: a worker submits its tasks' file operations to a ring
// of its own (docs/fs.md, "The ring path"). Each operation the kernel offers runs there, not
// on the blocking pool; a read that waits (a FIFO) wakes its task when the kernel answers,
// even while every worker sleeps; a read dropped with its entry in flight leaves the kernel
// a buffer of its own (ASan); one still in flight when the runtime shuts down is cancelled.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/fs.hpp"

namespace {

namespace fs = spool::fs;
using spool::Task;

// A multi-thread runtime on io_uring; nullopt where the kernel refuses io_uring.
std::optional<spool::Runtime> uring_runtime(std::size_t workers = 2) {
  try {
    return spool::Builder::multi_thread()
        .worker_threads(workers)
        .io_backend(spool::IoBackend::kIoUring)
        .build();
  } catch (const std::system_error&) {
    return std::nullopt;
  }
}

// True on Linux `major`.`minor` or later.
bool kernel_at_least(int major, int minor) {
  utsname u{};
  int ma = 0;
  int mi = 0;
  if (::uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
}

// The parks of all the runtime's workers so far.
std::uint64_t parks(spool::Runtime& rt) {
  std::uint64_t n = 0;
  for (const auto& w : rt.metrics().workers) n += w.parks;
  return n;
}

// Declares `rt`, a runtime from uring_runtime(args), or skips the test.
#define SPOOL_URING_RUNTIME(rt, ...)                             \
  std::optional<spool::Runtime> rt = uring_runtime(__VA_ARGS__); \
  if (!rt) GTEST_SKIP() << "io_uring cannot run here";           \
  static_assert(true)

TEST(FsRing, EachOperationTheKernelOffersRunsOnTheWorkersRing) {
  // (mkdirat, symlinkat and linkat came to io_uring with Linux 5.15)
  if (!kernel_at_least(5, 15)) GTEST_SKIP() << "Linux before 5.15";
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::TempDir dir;
  const auto before = rt->metrics();
  auto task = [](std::filesystem::path d) -> Task<std::string> {
    fs::File f = co_await fs::File::create(d / "a");  // openat
    co_await f.write_all(std::string_view("ring"));   // write
    co_await f.sync_all();                            // fsync
    co_await f.allocate(0, 4);                        // fallocate
    co_await fs::rename(d / "a", d / "b");            // renameat
    co_await fs::create_dir(d / "sub");               // mkdirat
    co_await fs::symlink(d / "b", d / "sym");         // symlinkat
    co_await fs::hard_link(d / "b", d / "hard");      // linkat
    // statx: procfs's attributes are not the kernel's cache of a disk's (cached_lookup.hpp)
    fs::File proc = co_await fs::File::open("/proc/self/status");           // openat
    const fs::Metadata own = co_await proc.metadata();                      // statx, AT_EMPTY_PATH
    co_await proc.close();                                                  // close
    const fs::Metadata link = co_await fs::symlink_metadata("/proc/self");  // statx
    const fs::Metadata target = co_await fs::metadata("/proc/self");        // statx
    if (!own.is_file() || !link.is_symlink() || !target.is_dir()) co_return "metadata";
    co_await fs::remove_file(d / "sym");                // unlinkat
    co_await fs::remove_dir(d / "sub");                 // unlinkat, AT_REMOVEDIR
    co_return co_await fs::read_to_string(d / "hard");  // openat, statx, close (or cached)
  };
  EXPECT_EQ(rt->block_on(rt->spawn(task(dir.path()))), "ring");
  const auto after = rt->metrics();
  // (A cached file on a local file system is opened and read on the polling thread.)
  const unsigned whole_read = spool_fs_test::answered_from_the_cache(dir.path()) ? 0 : 3;
  EXPECT_EQ(after.fs_ring_ops - before.fs_ring_ops, 15u + whole_read);
  EXPECT_EQ(after.fs_blocking_ops - before.fs_blocking_ops, 0u);
  EXPECT_EQ(after.fs_inline_reads - before.fs_inline_reads, 1u);  // read_to_string's bytes
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "a"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "sub"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "sym"));
  EXPECT_EQ(std::filesystem::hard_link_count(dir.path() / "b"), 2u);
}

// A file's whole read and create_dir_all are chains of ring operations, not one blocking job
// each; a whole write stays one job (it must run to its end, dropped or not), and so do copy
// (copy_file_range) and remove_dir_all (getdents), which io_uring does not offer.
TEST(FsRing, WholeReadsAndCreateDirAllAreChainsOnTheRing) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::TempDir dir;
  const auto data = spool_fs_test::pattern(3 * (std::size_t{1} << 20) + 5);
  const auto before = rt->metrics();
  auto task = [](std::filesystem::path d, std::vector<std::byte> data) -> Task<bool> {
    co_await fs::create_dir_all(d / "a" / "b" / "c");  // mkdirat: c, b ENOENT; a, b, c made
    co_await fs::create_dir_all(d / "a" / "b" / "c");  // mkdirat: EEXIST, statx (or cached)
    co_await fs::write(d / "a" / "f", data);           // one job
    const std::vector<std::byte> back = co_await fs::read(d / "a" / "f");  // openat, statx, close
    co_return back == data;
  };
  EXPECT_TRUE(rt->block_on(rt->spawn(task(dir.path(), data))));
  const auto after = rt->metrics();
  // (On a local file system the statx and the whole read come from the kernel's caches.)
  const unsigned hops = spool_fs_test::answered_from_the_cache(dir.path()) ? 0 : 1;
  EXPECT_EQ(after.fs_ring_ops - before.fs_ring_ops, 5u + 1u + hops * (1u + 3u));
  EXPECT_EQ(after.fs_blocking_ops - before.fs_blocking_ops, 1u);
  EXPECT_EQ(after.fs_inline_reads - before.fs_inline_reads, 1u);  // fs::read's bytes
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "a" / "b" / "c"));
}

// The io-wq threads the kernel has started for thread `tid`'s rings ("iou-wrk-<tid>").
int kernel_workers_of(long tid) {
  int n = 0;
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string name;
    std::getline(std::ifstream(t.path() / "comm"), name);
    n += name == "iou-wrk-" + std::to_string(tid) ? 1 : 0;
  }
  return n;
}

// A cached file or directory on a local file system opens on the polling thread: no ring
// operation, so no hop to the kernel's io-wq threads, which would cost more than the open. A
// FIFO's open goes to them (io_uring's non-blocking first try would open it at once, where
// open(2) waits for a writer).
TEST(FsRing, ACachedLocalFileOpensOnThePollingThreadAndAFifoOnTheKernelsWorkers) {
  SPOOL_URING_RUNTIME(rt, 1);
  const spool_fs_test::TempDir dir;
  std::ofstream(dir.path() / "f") << "file";
  SPOOL_SKIP_UNLESS_ANSWERED_FROM_THE_CACHE(dir.path() / "f");
  const spool_fs_test::Fifo fifo(true);  // a writer: the reader's open(2) does not wait
  const auto before = rt->metrics();
  auto task = [](std::filesystem::path d, std::filesystem::path fifo) -> Task<std::vector<int>> {
    const long me = ::gettid();  // (not pthread_self: clang keeps it across a co_await)
    std::vector<int> workers;
    EXPECT_EQ(co_await fs::read_to_string(d / "f"), "file");
    fs::File dir = co_await fs::File::open(d);
    workers.push_back(kernel_workers_of(me));
    fs::File f = co_await fs::File::open(fifo);  // openat, IOSQE_ASYNC
    workers.push_back(kernel_workers_of(me));
    co_return workers;
  };
  EXPECT_EQ(rt->block_on(rt->spawn(task(dir.path(), fifo.path()))), (std::vector<int>{0, 1}));
  const auto after = rt->metrics();
  EXPECT_EQ(after.fs_ring_ops - before.fs_ring_ops, 1u);  // the FIFO's
  EXPECT_EQ(after.fs_blocking_ops - before.fs_blocking_ops, 0u);
}

// A write at the file position dropped with its entry in flight, which the file-size limit
// cuts short (the kernel then answers the bytes written but leaves the position: docs/fs.md),
// still has the position moved past those bytes when its answer is reaped.
TEST(FsRing, ADroppedWriteThatALimitCutShortStillMovesThePosition) {
  SPOOL_URING_RUNTIME(rt, 1);
  const spool_fs_test::TempDir dir;
  const spool_fs_test::FileSizeLimitGuard limit(4096);
  auto task = [](std::filesystem::path p) -> Task<std::uint64_t> {
    fs::File f = co_await fs::File::create(p);
    const auto data = spool_fs_test::pattern(10'000);  // (a write's buffer outlives its Task)
    {
      auto write = f.write(data);
      co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
        EXPECT_TRUE(write.poll(cx).is_pending());  // submitted when this poll ends
        return true;
      });
    }  // dropped
    // Its answer, uncollected, is reaped while this task yields (an idle worker, a tick).
    std::uint64_t position = 0;
    for (int i = 0; i < spool_fs_test::kEventuallyPolls && position != 4096; ++i) {
      co_await spool::yield_now();
      position = co_await f.seek(0, fs::SeekFrom::kCurrent);
    }
    co_return position;
  };
  EXPECT_EQ(rt->block_on(rt->spawn(task(dir.path() / "f"))), 4096u);
}

// A whole read of a FIFO reads at its position (it has no offsets: pread would be ESPIPE).
TEST(FsRing, AWholeReadOfAFifoReadsAtItsPosition) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::Fifo fifo(false);
  auto read = rt->spawn(fs::read_to_string(fifo.path()));
  // Opened once the task's open waits for a writer (ENXIO until then), a bounded number of tries.
  int writer = -1;
  for (int i = 0; i < spool_fs_test::kEventuallyPolls && writer < 0; ++i) {
    writer = ::open(fifo.path().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (writer < 0 && errno != ENXIO) break;
    if (writer < 0) std::this_thread::yield();
  }
  ASSERT_GE(writer, 0) << "the task's open never came: " << std::strerror(errno);
  EXPECT_EQ(::write(writer, "hello", 5), 5);
  ::close(writer);
  EXPECT_EQ(rt->block_on(std::move(read)), "hello");
}

// A whole write dropped after its first poll runs to its end: it is one pool job on a ring
// runtime too (a chain of ring operations, abandoned after its truncating open, would leave
// the file empty). Its target is a FIFO, so the job cannot finish before the poll returns (its
// open waits for a reader) nor before the reader has taken every byte (4 pipe buffers' worth).
TEST(FsRing, ADroppedWholeWriteRunsToItsEnd) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::Fifo fifo(false);
  const auto data = spool_fs_test::pattern(256 * 1024 + 5);
  auto task = [](std::filesystem::path p, std::vector<std::byte> data) -> Task<bool> {
    {
      auto write = fs::write(p, data);
      co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
        EXPECT_TRUE(write.poll(cx).is_pending());  // it started: its job waits for a reader
        return true;
      });
    }  // dropped
    // Read to the writer's close: every byte, only if the dropped job ran to its end.
    co_return co_await fs::read(p) == data;
  };
  EXPECT_TRUE(rt->block_on(rt->spawn(task(fifo.path(), data))));
}

// The directories and files under `root`, as relative paths with a mark of their kind.
std::vector<std::string> tree(const std::filesystem::path& root) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    const char* kind = e.is_symlink() ? " -> " : e.is_directory() ? "/" : "";
    out.push_back(e.path().lexically_relative(root).string() + kind);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A file, a directory behind a symlink, a dangling symlink and a symlink loop.
void populate(const std::filesystem::path& root) {
  std::ofstream(root / "f") << "f";
  std::filesystem::create_directories(root / "real" / "sub");
  std::filesystem::create_directory_symlink(root / "real" / "sub", root / "link");
  std::filesystem::create_symlink(root / "nowhere", root / "dangling");
  std::filesystem::create_symlink(root / "loop", root / "loop");
}

// create_dir_all on the ring answers as std::filesystem::create_directories (the pool's job)
// does, case by case, and leaves the same tree: the kernel resolves each path whole ("link/.."
// is the link's parent's), an existing file is ENOTDIR, a dangling symlink EEXIST, a loop ELOOP.
TEST(FsRing, CreateDirAllAnswersAsCreateDirectories) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::TempDir ring_dir, std_dir;
  populate(ring_dir.path());
  populate(std_dir.path());
  auto on_ring = [](std::filesystem::path p) -> Task<int> {
    try {
      co_await fs::create_dir_all(p);
      co_return 0;
    } catch (const std::system_error& e) {
      co_return e.code().value();
    }
  };
  // libstdc++ refuses more than 1,000 missing components (ENAMETOOLONG) before it makes one.
  std::string deep_1000, deep_1001 = "e";
  for (int i = 0; i < 1000; ++i) {
    deep_1000 += i == 0 ? "d" : "/d";
    deep_1001 += "/e";
  }
  for (const std::string c :
       {"a/b/c", "a/b/c", "f", "f/", "f/sub", "dangling", "dangling/sub", "loop", "loop/sub",
        "link/../new", "x/y/..", "t/", ".", "real/sub/", deep_1000.c_str(), deep_1001.c_str()}) {
    std::error_code ec;
    std::filesystem::create_directories(std_dir.path() / c, ec);
    EXPECT_EQ(rt->block_on(rt->spawn(on_ring(ring_dir.path() / c))), ec.value()) << c.substr(0, 20);
  }
  EXPECT_EQ(rt->block_on(rt->spawn(on_ring(""))), EINVAL);
  EXPECT_EQ(tree(ring_dir.path()), tree(std_dir.path()));
}

// File::close runs on the ring, and really closes: the FIFO's only writer goes, and its
// reader sees the end.
TEST(FsRing, ACloseRunsOnTheRingAndClosesTheDescriptor) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::Fifo fifo(false);
  const int reader = ::open(fifo.path().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  const auto before = rt->metrics();
  auto task = [](std::filesystem::path p, int reader) -> Task<bool> {
    fs::File w = co_await fs::OpenOptions().write(true).open(p);  // openat (a reader waits)
    char byte = 0;
    const bool open_before = ::read(reader, &byte, 1) == -1 && errno == EAGAIN;
    co_await w.close();  // close
    co_return open_before;
  };
  EXPECT_TRUE(rt->block_on(rt->spawn(task(fifo.path(), reader))));
  char byte = 0;
  EXPECT_EQ(::read(reader, &byte, 1), 0) << "the writer's descriptor is still open";
  const auto after = rt->metrics();
  EXPECT_EQ(after.fs_ring_ops - before.fs_ring_ops, 2u);
  EXPECT_EQ(after.fs_blocking_ops - before.fs_blocking_ops, 0u);
  ::close(reader);
}

TEST(FsRing, AnErrorFromTheRingNamesTheCallAndThePath) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::TempDir dir;
  const auto missing = dir.path() / "missing";
  const auto before = rt->metrics().fs_ring_ops;
  // The error, as the task caught it: its code and its message; `stat`: of metadata.
  auto task = [](std::filesystem::path p,
                 bool stat) -> Task<std::pair<std::error_code, std::string>> {
    try {
      if (stat) {
        (void)co_await fs::metadata(p);
      } else {
        co_await fs::remove_file(p);
      }
    } catch (const std::system_error& e) {
      co_return std::pair{e.code(), std::string(e.what())};
    }
    co_return std::pair{std::error_code(), std::string("no error")};
  };
  for (const bool stat : {false, true}) {
    const auto [code, what] = rt->block_on(rt->spawn(task(missing, stat)));
    EXPECT_EQ(code, std::errc::no_such_file_or_directory);
    EXPECT_NE(what.find(stat ? "spool::fs::metadata" : "remove_file"), std::string::npos) << what;
    EXPECT_NE(what.find(missing.string()), std::string::npos) << what;
  }
  EXPECT_EQ(rt->metrics().fs_ring_ops - before, 2u);
}

// The read waits on the ring (a FIFO: no data yet, so the page-cache attempt says EAGAIN);
// the one worker then runs out of work and parks, the driver watching its ring; the write
// completes the read, and the task gets the bytes.
TEST(FsRing, ARingReadThatWaitsWakesItsTaskWhenTheKernelAnswers) {
  SPOOL_URING_RUNTIME(rt, 1);
  const spool_fs_test::Fifo fifo(true);
  const auto before = rt->metrics();
  auto reader = [](std::filesystem::path p) -> Task<std::string> {
    fs::File f = co_await fs::File::options().read(true).write(true).open(p);
    std::string buf(4, '\0');
    co_await f.read_exact(buf);
    co_return buf;
  };
  const std::uint64_t parks_before = parks(*rt);
  spool::JoinHandle<std::string> h = rt->spawn(reader(fifo.path()));
  // Both the open and the read are on the ring, and the worker has parked since the spawn
  // (as a rule after the read: it sleeps with the driver watching its ring), before the
  // write; the write completes the read either way.
  ASSERT_TRUE(spool_fs_test::eventually(
      [&] { return rt->metrics().fs_ring_ops - before.fs_ring_ops == 2; }));
  ASSERT_TRUE(spool_fs_test::eventually([&] { return parks(*rt) > parks_before; }));
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
      EXPECT_TRUE(read->poll(cx).is_pending());  // queued on this worker's ring
      return spool::Poll<void>::ready();
    });
    co_await poll_once;
    co_await spool::yield_now();  // the poll's end submits the read: now in the kernel
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

// write_all and read_exact of more than a ring entry moves (kMaxTransfer, 1 MiB) loop over
// entries: 2.5 MiB is three writes; read back through a FIFO (nothing cached to read
// inline), it arrives in pieces, each a read on the ring.
TEST(FsRing, CallsLargerThanAnEntryLoopOverEntries) {
  SPOOL_URING_RUNTIME(rt);
  const spool_fs_test::TempDir dir;
  const auto data = spool_fs_test::pattern(2'621'440);
  const auto before = rt->metrics().fs_ring_ops;
  auto writer = [](std::filesystem::path p, const std::vector<std::byte>* d) -> Task<void> {
    fs::File f = co_await fs::File::create(p);
    co_await f.write_all(*d);
  };
  rt->block_on(rt->spawn(writer(dir.path() / "big", &data)));
  EXPECT_EQ(rt->metrics().fs_ring_ops - before, 1u + 3u);  // the open, three writes
  std::ifstream in(dir.path() / "big", std::ios::binary);
  std::vector<std::byte> back(data.size());
  in.read(reinterpret_cast<char*>(back.data()), static_cast<std::streamsize>(back.size()));
  EXPECT_EQ(back, data);

  const spool_fs_test::Fifo fifo(true);
  auto reader = [](std::filesystem::path p, std::size_t n) -> Task<std::vector<std::byte>> {
    fs::File f = co_await fs::File::options().read(true).write(true).open(p);
    std::vector<std::byte> got(n);
    co_await f.read_exact(got);
    co_return got;
  };
  spool::JoinHandle<std::vector<std::byte>> h = rt->spawn(reader(fifo.path(), data.size()));
  std::thread feed([&] {
    for (std::size_t at = 0; at < data.size();) {
      const ssize_t n = ::write(fifo.writer(), data.data() + at, data.size() - at);
      ASSERT_GT(n, 0);
      at += static_cast<std::size_t>(n);
    }
  });
  EXPECT_EQ(rt->block_on(std::move(h)), data);
  feed.join();
}

// A task blocks its worker (block_in_place) while another task's read waits on that
// worker's ring: the ring ends before the block, so the read runs again on the pool and
// completes while the worker is still blocked (the blocking section waits for it).
// Reads 4 bytes of the FIFO at `p` into `out`.
Task<void> read_four(std::filesystem::path p, std::promise<std::string>* out) {
  fs::File f = co_await fs::File::options().read(true).write(true).open(p);
  std::string buf(4, '\0');
  co_await f.read_exact(buf);
  out->set_value(buf);
}

// Spawns read_four, lets it wait on this worker's ring (its open and its read submitted:
// `ring_ops` more), then blocks this worker (block_in_place) until it has read what this
// task writes.
Task<std::string> block_while_reading(std::filesystem::path p, int writer, spool::Runtime* rt,
                                      std::uint64_t ring_ops) {
  std::promise<std::string> result;
  std::future<std::string> got = result.get_future();
  spool::JoinHandle<void> r = spool::spawn(read_four(std::move(p), &result));
  for (int i = 0; i < 100'000 && rt->metrics().fs_ring_ops < ring_ops; ++i) {
    co_await spool::yield_now();  // the reader runs here (one worker), up to its read
  }
  EXPECT_EQ(rt->metrics().fs_ring_ops, ring_ops) << "the reader never got to its read";
  std::string value;
  spool::block_in_place([&] {
    EXPECT_EQ(::write(writer, "pool", 4), 4);
    value = got.get();  // only the pool can answer now: this thread blocks
  });
  co_await std::move(r);
  co_return value;
}

TEST(FsRing, ABlockingSectionEndsItsThreadsRingAndItsReadsGoToThePool) {
  SPOOL_URING_RUNTIME(rt, 1);  // one worker: the reader's read waits on the blocked one's ring
  const spool_fs_test::Fifo fifo(true);
  const auto before = rt->metrics();
  EXPECT_EQ(rt->block_on(rt->spawn(
                block_while_reading(fifo.path(), fifo.writer(), &*rt, before.fs_ring_ops + 2))),
            "pool");
  const auto after = rt->metrics();
  EXPECT_EQ(after.fs_ring_ops - before.fs_ring_ops, 2u);          // the open, the read
  EXPECT_EQ(after.fs_blocking_ops - before.fs_blocking_ops, 1u);  // the read, again
}

// A read still waiting when the runtime shuts down: its worker's ring cancels it as the
// thread leaves, so the shutdown ends (it would wait for ever), the task is dropped with its
// file, and nothing stays open (the ring's descriptors neither) or leaks (LSan).
TEST(FsRing, AReadInFlightAtShutdownIsCancelled) {
  const spool_fs_test::Fifo fifo(true);
  const std::size_t fds_before = spool_fs_test::open_fd_count();
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
  EXPECT_EQ(spool_fs_test::open_fd_count(), fds_before);
}

}  // namespace
