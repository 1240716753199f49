// spool::fs tests: a fresh directory per test, and the three ways a test body runs — on a
// multi-thread runtime, on a current-thread runtime, and under spool::block_on outside
// every runtime (a foreign executor: each call then runs on a thread of its own).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"

namespace spool_fs_test {

enum class Exec { kMultiThread, kCurrentThread, kForeign };

/// `p` in double quotes, as spool's fs errors print a path.
inline std::string q(const std::filesystem::path& p) { return "\"" + p.string() + "\""; }

inline std::string exec_name(Exec e) {
  return e == Exec::kMultiThread     ? "MultiThread"
         : e == Exec::kCurrentThread ? "CurrentThread"
                                     : "Foreign";
}

/// `n` bytes of a pattern that differs at every offset modulo 251 (a prime: no power-of-two
/// block lines up with it), starting at `offset`.
inline std::vector<std::byte> pattern(std::size_t n, std::size_t offset = 0) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((offset + i) % 251);
  return v;
}

/// A new empty directory under the system's temporary directory, removed with everything in
/// it when this goes out of scope (a failed ASSERT included).
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "spool-fs-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Whether spool answers `path` from the kernel's caches (docs/fs.md, path 1): its metadata,
/// its descriptors' metadata and, for a regular file or a directory, its open for reading and
/// its whole read. Told apart from src/fs/cached_lookup.cpp's way on purpose (statfs here,
/// which src must not call): the file system keeps its files' attributes itself; the kernel
/// names a file's mount without calling into it (Linux 6.12); the path is cached whole.
inline bool answered_from_the_cache(const std::filesystem::path& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return false;
  const auto t = static_cast<std::uint64_t>(fs.f_type);
  if (t != EXT4_SUPER_MAGIC && t != XFS_SUPER_MAGIC && t != BTRFS_SUPER_MAGIC && t != TMPFS_MAGIC) {
    return false;
  }
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_CACHED;  // (Linux 5.12)
  const long fd = ::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how);
  if (fd < 0) return false;
  file_handle handle{};
  std::uint64_t mount = 0;
  const bool named = ::syscall(SYS_name_to_handle_at, fd, "", &handle, &mount,
                               AT_EMPTY_PATH | 0x001 /* AT_HANDLE_MNT_ID_UNIQUE, 6.12 */) == -1 &&
                     errno == EOVERFLOW;
  ::close(static_cast<int>(fd));
  // statmount (6.8, number 457 on x86-64 and arm64) answers for it here (not in a chroot that
  // hides the mount's root, nor where a policy refuses it): its request, version 0.
  struct {
    std::uint32_t size = 24, spare = 0;
    std::uint64_t mnt_id, param = 1;  // STATMOUNT_SB_BASIC
  } request{.mnt_id = mount};
  alignas(8) unsigned char answer[1024];
  return named && ::syscall(457, &request, answer, sizeof answer, 0) == 0;
}

/// Skips the test unless spool answers `path` from the kernel's caches (above).
#define SPOOL_SKIP_UNLESS_ANSWERED_FROM_THE_CACHE(path) \
  if (!spool_fs_test::answered_from_the_cache(path))    \
  GTEST_SKIP() << "not a local file system, or Linux before 6.12: " << (path)

/// RLIMIT_FSIZE at `limit` bytes with SIGXFSZ ignored (it kills the process otherwise), both
/// restored at the end of the scope, whatever ends it.
class FileSizeLimitGuard {
 public:
  explicit FileSizeLimitGuard(rlim_t limit) {
    if (::getrlimit(RLIMIT_FSIZE, &old_) != 0)
      throw std::system_error(errno, std::generic_category());
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    if (::sigaction(SIGXFSZ, &ignore, &old_action_) != 0) {
      throw std::system_error(errno, std::generic_category());
    }
    rlimit small = old_;
    small.rlim_cur = limit;
    if (::setrlimit(RLIMIT_FSIZE, &small) != 0) {
      ::sigaction(SIGXFSZ, &old_action_, nullptr);
      throw std::system_error(errno, std::generic_category());
    }
  }
  ~FileSizeLimitGuard() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::sigaction(SIGXFSZ, &old_action_, nullptr);
  }
  FileSizeLimitGuard(const FileSizeLimitGuard&) = delete;
  FileSizeLimitGuard& operator=(const FileSizeLimitGuard&) = delete;

 private:
  rlimit old_{};
  struct sigaction old_action_ {};
};

/// How many descriptors this process has open (the listing's own one included).
inline std::size_t open_fd_count() {
  const auto fds = std::filesystem::directory_iterator("/proc/self/fd");
  return static_cast<std::size_t>(std::distance(begin(fds), end(fds)));
}

/// A FIFO in a directory of its own, both removed afterwards; with_writer: writer() is an end
/// held open from the start (O_RDWR: its open waits for no reader), closed afterwards.
class Fifo {
 public:
  explicit Fifo(bool with_writer) {
    if (::mkfifo(path_.c_str(), 0600) != 0) {
      throw std::system_error(errno, std::generic_category(), "mkfifo " + path_.string());
    }
    if (with_writer && (writer_ = ::open(path_.c_str(), O_RDWR | O_CLOEXEC)) < 0) {
      throw std::system_error(errno, std::generic_category(), "open " + path_.string());
    }
  }
  ~Fifo() {
    if (writer_ >= 0) ::close(writer_);
  }
  Fifo(const Fifo&) = delete;
  Fifo& operator=(const Fifo&) = delete;
  const std::filesystem::path& path() const { return path_; }
  int writer() const { return writer_; }

 private:
  TempDir dir_;
  std::filesystem::path path_ = dir_.path() / "fifo";
  int writer_ = -1;
};

/// How many times eventually() polls before it gives up.
inline constexpr int kEventuallyPolls = 200'000;

/// Success once `done()` is true, polled up to kEventuallyPolls times with a yield between:
/// for a test waiting on a pool thread it cannot join. Bounded by count, not time, so a
/// condition that never comes fails the test with this message instead of hanging it.
template <class Done>
::testing::AssertionResult eventually(Done done) {
  for (int i = 0; i < kEventuallyPolls; ++i) {
    if (done()) return ::testing::AssertionSuccess();
    std::this_thread::yield();
  }
  return ::testing::AssertionFailure()
         << "the condition was still false after " << kEventuallyPolls << " polls";
}

/// The fixture: dir() is a new empty directory, removed afterwards; run(task) runs a test
/// body on the param's executor — on a multi-thread runtime as a spawned task, so that its
/// calls run on a worker (which, with SPOOL_IO_BACKEND=io_uring, submits to its ring).
class FsTest : public ::testing::TestWithParam<Exec> {
 protected:
  void SetUp() override {
    if (GetParam() == Exec::kMultiThread) {
      rt_.emplace(spool::Builder::multi_thread().worker_threads(2).build());
    } else if (GetParam() == Exec::kCurrentThread) {
      rt_.emplace(spool::Builder::current_thread().build());
    }
  }
  void TearDown() override { rt_.reset(); }
  const std::filesystem::path& dir() const { return dir_.path(); }
  bool in_runtime() const { return rt_.has_value(); }
  /// The calls that left the polling thread for the pool or a ring (0 under the foreign
  /// executor): fs_blocking_ops + fs_ring_ops of the test's runtime.
  std::uint64_t fs_ops() {
    if (!rt_) return 0;
    const spool::RuntimeMetrics m = rt_->metrics();
    return m.fs_blocking_ops + m.fs_ring_ops;
  }

  template <class T>
  T run(spool::Task<T> task) {
    if (GetParam() == Exec::kMultiThread) {
      try {
        return rt_->block_on(rt_->spawn(std::move(task)));
      } catch (const spool::JoinError& e) {
        if (e.exception()) e.rethrow_nested();  // the body's own, as the other executors give it
        throw;
      }
    }
    if (rt_) return rt_->block_on(std::move(task));
    return spool::block_on(std::move(task));
  }

 private:
  TempDir dir_;  // before rt_: removed after the runtime (and its pending jobs) is gone
  std::optional<spool::Runtime> rt_;
};

/// The test-name generator.
struct ExecName {
  std::string operator()(const ::testing::TestParamInfo<Exec>& info) const {
    return exec_name(info.param);
  }
};

/// Runs `run_expr` and expects it to throw std::system_error with `err`, whose what() is
/// `message` followed by strerror's text.
#define SPOOL_EXPECT_FS_ERROR(run_expr, err, message)                                     \
  do {                                                                                    \
    try {                                                                                 \
      run_expr;                                                                           \
      ADD_FAILURE() << "no error thrown; expected " << (message);                         \
    } catch (const std::system_error& e) {                                                \
      EXPECT_EQ(e.code(), std::error_code((err), std::generic_category())) << e.what();   \
      EXPECT_EQ(std::string(e.what()), std::string(message) + ": " + std::strerror(err)); \
    }                                                                                     \
  } while (0)

}  // namespace spool_fs_test

#define SPOOL_FS_INSTANTIATE(suite)                                                              \
  INSTANTIATE_TEST_SUITE_P(                                                                      \
      , suite,                                                                                   \
      ::testing::Values(::spool_fs_test::Exec::kMultiThread,                                     \
                        ::spool_fs_test::Exec::kCurrentThread, ::spool_fs_test::Exec::kForeign), \
      ::spool_fs_test::ExecName())
