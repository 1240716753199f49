// What the polling thread asks the kernel's caches (src/fs/cached_lookup.hpp): which opens may
// take io_uring's non-blocking first try (a cached regular file or directory, opened without
// creating or truncating) and which must go to the kernel's workers (anything that open(2)
// might wait on or that a device answers: a FIFO, a character device; a path not cached or
// not there), a descriptor's type and size from the cache, and metadata from it only where the
// kernel keeps the attributes itself.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "fs/cached_lookup.hpp"
#include "support/fs.hpp"

namespace {

using spool::detail::fs_ops::cached_stat;
using spool::detail::fs_ops::exact_cached_stat;
using spool::detail::fs_ops::opens_without_waiting;

// RESOLVE_CACHED came with Linux 5.12; before it every open is "not known".
bool resolve_cached_exists() {
  utsname u{};
  int major = 0;
  int minor = 0;
  if (::uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 5 || (major == 5 && minor >= 12);
}

TEST(CachedLookup, OnlyACachedRegularFileOrDirectoryOpensWithoutWaiting) {
  if (!resolve_cached_exists()) GTEST_SKIP() << "no RESOLVE_CACHED before Linux 5.12";
  const spool_fs_test::TempDir dir;
  const std::string file = (dir.path() / "f").string();
  std::ofstream(file) << "f";
  const std::string link = (dir.path() / "link").string();
  std::filesystem::create_symlink(file, link);
  const spool_fs_test::Fifo fifo(false);

  EXPECT_TRUE(opens_without_waiting(file.c_str(), O_RDONLY));
  EXPECT_TRUE(opens_without_waiting(file.c_str(), O_RDWR | O_APPEND));
  EXPECT_TRUE(opens_without_waiting(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
  // (A followed symlink may need the walk that RESOLVE_CACHED refuses: either answer is safe.)
  EXPECT_FALSE(opens_without_waiting(link.c_str(), O_RDONLY | O_NOFOLLOW));  // the link: ELOOP
  EXPECT_FALSE(opens_without_waiting(file.c_str(), O_WRONLY | O_CREAT));     // always io-wq
  EXPECT_FALSE(opens_without_waiting(file.c_str(), O_WRONLY | O_TRUNC));
  EXPECT_FALSE(opens_without_waiting(fifo.path().c_str(), O_RDONLY));  // open(2) waits
  EXPECT_FALSE(opens_without_waiting(fifo.path().c_str(), O_WRONLY));
  EXPECT_FALSE(opens_without_waiting("/dev/null", O_RDONLY));  // a device's open
  EXPECT_FALSE(opens_without_waiting((dir.path() / "missing").c_str(), O_RDONLY));
}

TEST(CachedLookup, CachedStatGivesAnOpenDescriptorsTypeAndSize) {
  const spool_fs_test::TempDir dir;
  std::ofstream(dir.path() / "f") << "12345";
  const int fd = ::open((dir.path() / "f").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const auto st = cached_stat(fd);
  ::close(fd);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->type, std::filesystem::file_type::regular);
  EXPECT_EQ(st->len, 5u);
  EXPECT_FALSE(cached_stat(fd).has_value()) << "a closed descriptor";
}

TEST(CachedLookup, ExactMetadataComesFromTheCacheOnlyWhereTheKernelKeepsIt) {
  if (!resolve_cached_exists()) GTEST_SKIP() << "no RESOLVE_CACHED before Linux 5.12";
  const spool_fs_test::TempDir dir;
  if (!spool_fs_test::metadata_from_the_cache(dir.path()))
    GTEST_SKIP() << "not a local file system";
  const std::filesystem::path file = dir.path() / "f";
  std::ofstream(file) << "1234567";
  const std::filesystem::path link = dir.path() / "link";
  std::filesystem::create_symlink(file, link);
  struct stat want {};
  ASSERT_EQ(::stat(file.c_str(), &want), 0);

  const auto followed = exact_cached_stat(link.c_str(), true);
  const auto not_followed = exact_cached_stat(link.c_str(), false);
  // (A followed symlink may need the walk that RESOLVE_CACHED refuses: then no answer.)
  if (followed) {
    EXPECT_EQ(followed->ino, want.st_ino);
    EXPECT_EQ(followed->len, 7u);
  }
  ASSERT_TRUE(not_followed.has_value());
  EXPECT_EQ(not_followed->type, std::filesystem::file_type::symlink);
  const auto by_path = exact_cached_stat(file.c_str(), true);
  ASSERT_TRUE(by_path.has_value());
  EXPECT_EQ(by_path->ino, want.st_ino);
  EXPECT_EQ(by_path->len, 7u);
  EXPECT_EQ(by_path->mode, want.st_mode & 07777);
  EXPECT_FALSE(exact_cached_stat((dir.path() / "missing").c_str(), true)) << "the slow way's error";
  // procfs makes its attributes when asked: not from a cache.
  EXPECT_FALSE(exact_cached_stat("/proc/self/status", true).has_value());
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(exact_cached_stat(fd).has_value());
  ::close(fd);
}

}  // namespace
