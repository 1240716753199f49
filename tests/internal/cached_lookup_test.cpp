// What the polling thread asks the kernel's caches (src/fs/cached_lookup.hpp,
// local_mounts.hpp): which mounts keep their attributes themselves, read from the mount table;
// metadata from the caches, field for field as stat(2) gives it, only on those; and opens of
// a cached regular file or directory there, and of nothing that open(2) might wait on (a FIFO,
// a device), nothing that creates or truncates, nothing on another file system.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fs/cached_lookup.hpp"
#include "fs/local_mounts.hpp"
#include "support/fs.hpp"

namespace {

namespace fs_ops = spool::detail::fs_ops;

TEST(LocalMounts, TheTableListsTheLocalFileSystemsByIdAndDevice) {
  const std::string text =
      "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
      "27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "30 27 0:25 /a\\040b /mnt/a\\040b rw - tmpfs tmpfs rw,size=10k\n"
      "31 27 0:26 / /net rw - nfs4 server:/export rw\n"
      "not a mount line\n"
      "32 27 8:17 / /usb rw master:3 - fuseblk /dev/sdb1 rw\n"
      "33 27 253:1 / /data rw shared:2 master:4 - xfs /dev/dm-1 rw\n"
      "34 27 0:27 / /b rw - btrfs /dev/vdb rw";  // (no newline at the end)
  std::vector<std::pair<std::uint64_t, dev_t>> got;
  for (const auto& m : fs_ops::local_mounts_in(text)) got.emplace_back(m.id, m.dev);
  const std::vector<std::pair<std::uint64_t, dev_t>> want{
      {27, makedev(254, 0)}, {30, makedev(0, 25)}, {33, makedev(253, 1)}, {34, makedev(0, 27)}};
  EXPECT_EQ(got, want);
}

TEST(LocalMounts, ThisProcesssMountsAreAskedByTheirIdAndDevice) {
  const spool_fs_test::TempDir dir;
  struct statx st {};
  ASSERT_EQ(::statx(AT_FDCWD, dir.path().c_str(), 0, STATX_MNT_ID, &st), 0);
  if ((st.stx_mask & STATX_MNT_ID) == 0) GTEST_SKIP() << "no STATX_MNT_ID before Linux 5.8";
  const dev_t dev = makedev(st.stx_dev_major, st.stx_dev_minor);
  EXPECT_EQ(fs_ops::is_local_mount(st.stx_mnt_id, dev),
            spool_fs_test::metadata_from_the_cache(dir.path()));
  EXPECT_FALSE(fs_ops::is_local_mount(st.stx_mnt_id, makedev(0, 999'999))) << "another device";
  ASSERT_EQ(::statx(AT_FDCWD, "/proc/self/status", 0, STATX_MNT_ID, &st), 0);
  EXPECT_FALSE(fs_ops::is_local_mount(st.stx_mnt_id, makedev(st.stx_dev_major, st.stx_dev_minor)));
}

// Whether this process may make a mount namespace of its own (root, CAP_SYS_ADMIN).
bool may_unshare_mounts() {
  const pid_t child = ::fork();
  if (child == 0) _exit(::unshare(CLONE_NEWNS) == 0 ? 0 : 1);
  int status = 0;
  return child > 0 && ::waitpid(child, &status, 0) == child && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

// Whether the mount at `dir` is local by is_local_mount.
bool asked_local(const std::string& dir) {
  struct statx st {};
  return ::statx(AT_FDCWD, dir.c_str(), 0, STATX_MNT_ID, &st) == 0 &&
         fs_ops::is_local_mount(st.stx_mnt_id, makedev(st.stx_dev_major, st.stx_dev_minor));
}

// In a mount namespace of its own (a child process): a tmpfs mounted after the first question
// is found (the table is read again after a change), and a procfs mounted in its place is not.
int mounts_are_read_again_after_a_change() {
  if (::unshare(CLONE_NEWNS) != 0 ||
      ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return 1;
  }
  char tmpl[] = "/tmp/spool-mounts-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl) != nullptr ? tmpl : "";
  if (dir.empty()) return 2;
  (void)asked_local(dir);  // the first question reads the table
  if (::mount("none", dir.c_str(), "tmpfs", 0, "size=64k") != 0) return 3;
  const bool tmpfs_local = asked_local(dir);
  if (::umount(dir.c_str()) != 0 || ::mount("proc", dir.c_str(), "proc", 0, nullptr) != 0) return 4;
  const bool proc_local = asked_local(dir);
  (void)::umount(dir.c_str());
  ::rmdir(dir.c_str());
  return tmpfs_local && !proc_local ? 0 : 5;
}

TEST(LocalMountsDeathTest, TheTableIsReadAgainAfterAMountOrAnUnmount) {
  if (!may_unshare_mounts()) GTEST_SKIP() << "no mount namespace of its own here";
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the table unread
  EXPECT_EXIT(std::exit(mounts_are_read_again_after_a_change()), ::testing::ExitedWithCode(0), "");
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
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
  };
  EXPECT_EQ(got->modified.time_since_epoch(),
            std::chrono::duration_cast<std::chrono::system_clock::duration>(at(want.st_mtim)));
  EXPECT_EQ(got->accessed.time_since_epoch(),
            std::chrono::duration_cast<std::chrono::system_clock::duration>(at(want.st_atim)));
}

TEST(CachedLookup, MetadataFromTheCachesIsStats) {
  const spool_fs_test::TempDir dir;
  if (!spool_fs_test::opens_from_the_cache(dir.path()))
    GTEST_SKIP() << "not a local file system, or Linux before 5.12";
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

// open_cached's descriptor, with its F_GETFL status flags; -1 where it refused.
std::pair<int, int> open_cached_flags(const std::filesystem::path& p, int flags) {
  const auto cached = fs_ops::open_cached(p.c_str(), flags);
  if (!cached) return {-1, 0};
  const int fd = cached->fd;
  const int status = ::fcntl(fd, F_GETFL);
  const int cloexec = ::fcntl(fd, F_GETFD) & FD_CLOEXEC;
  ::close(fd);
  return {cloexec ? 1 : 0, status};
}

TEST(CachedLookup, OnlyACachedLocalRegularFileOrDirectoryOpensThere) {
  const spool_fs_test::TempDir dir;
  if (!spool_fs_test::opens_from_the_cache(dir.path()))
    GTEST_SKIP() << "not a local file system, or Linux before 5.12";
  const std::filesystem::path file = dir.path() / "f";
  std::ofstream(file) << "f";
  const spool_fs_test::Fifo fifo(false);

  if (const auto opened = fs_ops::open_cached(file.c_str(), O_RDONLY)) {
    EXPECT_EQ(opened->fields.type, std::filesystem::file_type::regular);
    EXPECT_EQ(opened->fields.len, 1u);
    ::close(opened->fd);
  } else {
    ADD_FAILURE() << "a cached local file was not opened";
  }
  const auto [cloexec, status] = open_cached_flags(file, O_RDONLY);
  EXPECT_EQ(cloexec, 1);
  EXPECT_EQ(status & (O_ACCMODE | O_NONBLOCK | O_APPEND), O_RDONLY) << "O_NONBLOCK left set";
  EXPECT_EQ(
      open_cached_flags(file, O_WRONLY | O_APPEND).second & (O_ACCMODE | O_NONBLOCK | O_APPEND),
      O_WRONLY | O_APPEND);
  EXPECT_EQ(open_cached_flags(dir.path(), O_RDONLY | O_DIRECTORY).first, 1);
  EXPECT_FALSE(fs_ops::open_cached(file.c_str(), O_WRONLY | O_CREAT));  // the slow way's
  EXPECT_FALSE(fs_ops::open_cached(file.c_str(), O_WRONLY | O_TRUNC));
  EXPECT_FALSE(fs_ops::open_cached(dir.path().c_str(), O_WRONLY));   // EISDIR: the slow way says
  EXPECT_FALSE(fs_ops::open_cached(fifo.path().c_str(), O_RDONLY));  // open(2) waits
  EXPECT_FALSE(fs_ops::open_cached(fifo.path().c_str(), O_WRONLY));
  EXPECT_FALSE(fs_ops::open_cached("/dev/null", O_RDONLY));  // a device's open, devtmpfs
  EXPECT_FALSE(fs_ops::open_cached("/proc/self/status", O_RDONLY));
  EXPECT_FALSE(fs_ops::open_cached((dir.path() / "missing").c_str(), O_RDONLY));
  // The FIFO was never opened: a writer's non-blocking open still finds no reader.
  EXPECT_EQ(::open(fifo.path().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC), -1);
  EXPECT_EQ(errno, ENXIO);
}

}  // namespace
