// spool::fs::copy's refusals and fallbacks: a source that is no regular file, a destination
// that is the source (by path, hard link or symlink), and a copy_file_range that copies
// nothing from a file that has bytes (procfs / sysfs on some kernels), on every executor.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>
#include <string>

#include "spool/spool.hpp"
#include "support/fs.hpp"

// The calls of the stand-in below that copied nothing from a procfs-like source. Added to
// (relaxed) on the thread of a copy's job; read by the test once that copy's result is back,
// which the result's delivery (the job's completion, release / acquire) orders after the add.
std::atomic<int> g_procfs_like_calls{0};

// The copy_file_range spool calls (this definition takes the C library's place in this
// binary): the kernel's, except for a source named procfs-like*, of which it copies nothing,
// as some kernels do for a file in /proc, whose size says 0.
extern "C" ssize_t copy_file_range(int in, loff_t* in_off, int out, loff_t* out_off,
                                   std::size_t len, unsigned int flags) {
  char target[PATH_MAX] = {};
  const std::string link = "/proc/self/fd/" + std::to_string(in);
  if (::readlink(link.c_str(), target, sizeof target - 1) > 0 &&
      std::filesystem::path(target).filename().string().starts_with("procfs-like")) {
    g_procfs_like_calls.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  return ::syscall(SYS_copy_file_range, in, in_off, out, out_off, len, flags);
}

namespace {

namespace fs = spool::fs;
using spool_fs_test::FsTest;

class FsCopy : public FsTest {};
SPOOL_FS_INSTANTIATE(FsCopy);

using spool_fs_test::q;

std::string same_file(const std::filesystem::path& from, const std::filesystem::path& to) {
  return "spool::fs::copy " + q(from) + " -> " + q(to) +
         ": the source and the destination are the same file (copying would empty it)";
}

std::string not_regular(const std::filesystem::path& from, const std::filesystem::path& to) {
  return "spool::fs::copy " + q(from) + " -> " + q(to) +
         ": the source is not a regular file (nor a symlink to one); only files copy";
}

TEST_P(FsCopy, OntoItselfIsRefusedAndTheFileKept) {
  const auto p = dir() / "p";
  const auto hard = dir() / "hard";
  const auto soft = dir() / "soft";
  run(fs::write(p, std::string_view("keep me")));
  run(fs::hard_link(p, hard));
  run(fs::symlink(p, soft));
  SPOOL_EXPECT_FS_ERROR(run(fs::copy(p, p)), EINVAL, same_file(p, p));
  SPOOL_EXPECT_FS_ERROR(run(fs::copy(p, hard)), EINVAL, same_file(p, hard));
  SPOOL_EXPECT_FS_ERROR(run(fs::copy(soft, p)), EINVAL, same_file(soft, p));
  EXPECT_EQ(run(fs::read_to_string(p)), "keep me");
}

// `to` a symlink to `from`: opening `to` opens `from`, whose truncation would empty it.
TEST_P(FsCopy, OntoASymlinkToTheSourceIsRefusedAndTheFileKept) {
  const auto p = dir() / "p";
  const auto soft = dir() / "soft";
  run(fs::write(p, std::string_view("keep me")));
  run(fs::symlink(p, soft));
  SPOOL_EXPECT_FS_ERROR(run(fs::copy(p, soft)), EINVAL, same_file(p, soft));
  EXPECT_EQ(run(fs::read_to_string(p)), "keep me");
  EXPECT_TRUE(run(fs::symlink_metadata(soft)).is_symlink());
}

TEST_P(FsCopy, ASourceThatIsNoRegularFileIsRefused) {
  const auto fifo = dir() / "fifo";
  const auto to = dir() / "to";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Refused at once: the open waits for no writer, and nothing is read.
  SPOOL_EXPECT_FS_ERROR(run(fs::copy(fifo, to)), EINVAL, not_regular(fifo, to));
  SPOOL_EXPECT_FS_ERROR(run(fs::copy("/dev/null", to)), EINVAL, not_regular("/dev/null", to));
  // A socket is refused unopened (its open would say ENXIO).
  const auto sock = dir() / "sock";
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(sock.string().size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  SPOOL_EXPECT_FS_ERROR(run(fs::copy(sock, to)), EINVAL, not_regular(sock, to));
  ::close(s);
  EXPECT_FALSE(std::filesystem::exists(to));  // refused before `to` was made
}

// A destination that is no regular file takes the bytes as it is: not truncated, its mode
// kept (ftruncate of /dev/null fails with EINVAL).
TEST_P(FsCopy, ToADeviceCopiesTheBytesAndKeepsItsMode) {
  const auto p = dir() / "p";
  run(fs::write(p, std::string_view("to nowhere")));
  struct stat before {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  EXPECT_EQ(run(fs::copy(p, "/dev/null")), 10u);
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_EQ(after.st_mode, before.st_mode);
}

TEST_P(FsCopy, AFailedDestinationIsNamed) {
  const auto p = dir() / "p";
  const auto to = dir() / "no-dir" / "to";
  run(fs::write(p, std::string_view("x")));
  SPOOL_EXPECT_FS_ERROR(run(fs::copy(p, to)), ENOENT,
                        "spool::fs::copy " + q(p) + " -> " + q(to) + ": opening the destination");
}

TEST_P(FsCopy, AFirstCopyFileRangeOfNothingFallsBackToReading) {
  const auto from = dir() / "procfs-like";
  const auto to = dir() / "to";
  const auto data = spool_fs_test::pattern(70'000);
  run(fs::write(from, data));
  const int calls_before = g_procfs_like_calls.load(std::memory_order_relaxed);
  EXPECT_EQ(run(fs::copy(from, to)), data.size());
  EXPECT_EQ(run(fs::read(to)), data);
  // One copy_file_range, which copied nothing; read and write did the rest (a second call
  // would mean copy_file_range was tried again, none that the stand-in was not used).
  EXPECT_EQ(g_procfs_like_calls.load(std::memory_order_relaxed) - calls_before, 1);
  // An empty file still copies as empty.
  run(fs::write(from, std::string_view("")));
  EXPECT_EQ(run(fs::copy(from, to)), 0u);
  EXPECT_EQ(run(fs::metadata(to)).len(), 0u);
  EXPECT_EQ(g_procfs_like_calls.load(std::memory_order_relaxed) - calls_before, 2);
}

TEST_P(FsCopy, AProcFileCopiesItsContent) {
  const auto to = dir() / "status";
  EXPECT_GT(run(fs::copy("/proc/self/status", to)), 0u);
  EXPECT_NE(run(fs::read_to_string(to)).find("Name:"), std::string::npos);
}

}  // namespace
