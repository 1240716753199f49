// What the polling thread asks the kernel's caches (src/fs/cached_lookup.hpp): whether a file
// is on a local file system, asked without calling into the file system; metadata from the
// caches, field for field as stat(2) gives it, only there; and opens for reading of a cached
// regular file or directory there, of nothing that open(2) might wait on (a FIFO, a device)
// and of nothing elsewhere.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

#include "fs/cached_lookup.hpp"
#include "support/fs.hpp"

namespace {

namespace fs_ops = spool::detail::fs_ops;

// on_local_file_system's answer for `path`'s O_PATH descriptor, asked twice (the second
// answer comes from the thread's list of mounts); nullopt where the two differ.
std::optional<bool> asked_local(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const bool first = fs_ops::on_local_file_system(fd);
  const bool again = fs_ops::on_local_file_system(fd);
  ::close(fd);
  return first == again ? std::optional<bool>(first) : std::nullopt;
}

TEST(CachedLookup, LocalFileSystemsAreToldWithoutAskingThem) {
  const spool_fs_test::TempDir dir;
  EXPECT_EQ(asked_local(dir.path()), spool_fs_test::answered_from_the_cache(dir.path()));
  if (std::filesystem::exists("/dev/shm")) {
    EXPECT_EQ(asked_local("/dev/shm"), spool_fs_test::answered_from_the_cache("/dev/shm"));
  }
  EXPECT_EQ(asked_local("/proc/self/status"), false);  // no file handles
  // cgroup2 has file handles: its mount is asked, and its magic is not a local one.
  for (const char* cgroup2 : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs fs {};
    if (::statfs(cgroup2, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
      EXPECT_EQ(asked_local(cgroup2), false) << cgroup2;
    }
  }
  EXPECT_FALSE(fs_ops::on_local_file_system(-1));
}

// Every field of `got` is the one stat(2) or lstat(2) gives.
void expect_fields_of(const std::optional<spool::fs::Metadata::Fields>& got,
                      const struct stat& want) {
  ASSERT_TRUE(got.has_value());
  using T = std::filesystem::file_type;
  EXPECT_EQ(got->type, S_ISLNK(want.st_mode)   ? T::symlink
                       : S_ISDIR(want.st_mode) ? T::directory
                                               : T::regular);
  EXPECT_EQ(got->mode, want.st_mode & 07777);
  EXPECT_EQ(got->len, static_cast<std::uint64_t>(want.st_size));
  EXPECT_EQ(got->ino, want.st_ino);
  EXPECT_EQ(got->dev, want.st_dev);
  EXPECT_EQ(got->nlink, want.st_nlink);
  EXPECT_EQ(got->uid, want.st_uid);
  EXPECT_EQ(got->gid, want.st_gid);
  const auto at = [](const timespec& t) {
    return std::chrono::duration_cast<std::chrono::system_clock::duration>(
        std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec));
  };
  EXPECT_EQ(got->modified.time_since_epoch(), at(want.st_mtim));
  EXPECT_EQ(got->accessed.time_since_epoch(), at(want.st_atim));
}

TEST(CachedLookup, MetadataFromTheCachesIsStats) {
  const spool_fs_test::TempDir dir;
  SPOOL_SKIP_UNLESS_ANSWERED_FROM_THE_CACHE(dir.path());
  const std::filesystem::path file = dir.path() / "f";
  std::ofstream(file) << "1234567";
  const std::filesystem::path link = dir.path() / "link";
  std::filesystem::create_symlink(file, link);
  struct stat want {};
  ASSERT_EQ(::stat(file.c_str(), &want), 0);
  expect_fields_of(fs_ops::exact_cached_stat(file.c_str(), true), want);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  expect_fields_of(fs_ops::exact_cached_stat(fd), want);
  ::close(fd);
  ASSERT_EQ(::lstat(link.c_str(), &want), 0);
  expect_fields_of(fs_ops::exact_cached_stat(link.c_str(), false), want);
  // (A followed symlink may need the walk that RESOLVE_CACHED refuses: then no answer.)
  if (const auto followed = fs_ops::exact_cached_stat(link.c_str(), true)) {
    ASSERT_EQ(::stat(file.c_str(), &want), 0);
    expect_fields_of(followed, want);
  }
  EXPECT_FALSE(fs_ops::exact_cached_stat((dir.path() / "missing").c_str(), true));
  EXPECT_FALSE(fs_ops::exact_cached_stat(-1));
}

TEST(CachedLookup, ProcfsMetadataIsNotFromTheCaches) {
  EXPECT_FALSE(fs_ops::exact_cached_stat("/proc/self/status", true));
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(fs_ops::exact_cached_stat(fd));
  ::close(fd);
}

TEST(CachedLookup, OnlyACachedLocalRegularFileOrDirectoryOpensThere) {
  const spool_fs_test::TempDir dir;
  SPOOL_SKIP_UNLESS_ANSWERED_FROM_THE_CACHE(dir.path());
  const std::filesystem::path file = dir.path() / "f";
  std::ofstream(file) << "f";
  const spool_fs_test::Fifo fifo(false);

  for (const auto& [path, type] : {std::pair{file, std::filesystem::file_type::regular},
                                   std::pair{dir.path(), std::filesystem::file_type::directory}}) {
    const auto opened = fs_ops::open_cached(path.c_str());
    ASSERT_TRUE(opened.has_value()) << path;
    EXPECT_EQ(opened->fields.type, type);
    EXPECT_EQ(::fcntl(opened->fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDONLY) << path;
    EXPECT_NE(::fcntl(opened->fd, F_GETFD) & FD_CLOEXEC, 0) << path;
    ::close(opened->fd);
  }
  EXPECT_FALSE(fs_ops::open_cached(fifo.path().c_str()));  // open(2) waits for a writer
  EXPECT_FALSE(fs_ops::open_cached("/dev/null"));          // a device's open (devtmpfs)
  EXPECT_FALSE(fs_ops::open_cached("/proc/self/status"));
  EXPECT_FALSE(fs_ops::open_cached((dir.path() / "missing").c_str()));
  // The FIFO was never opened: a writer's non-blocking open still finds no reader.
  EXPECT_EQ(::open(fifo.path().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC), -1);
  EXPECT_EQ(errno, ENXIO);
}

}  // namespace
