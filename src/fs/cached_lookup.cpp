// Questions to the kernel's caches from the polling thread (cached_lookup.hpp).
#include "fs/cached_lookup.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/stat_fields.hpp"

namespace spool::detail::fs_ops {

namespace {

// An O_PATH descriptor of `path`, or -1. O_PATH opens nothing (no FIFO waits, no device's
// open runs); RESOLVE_CACHED (Linux 5.12) fails EAGAIN where the lookup would read a
// directory from a disk. Any failure, openat2 missing too, means "not known": the caller then
// asks the slow way, which reports a real error.
class CachedPath {
 public:
  CachedPath(const char* path, bool follow) noexcept {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC | (follow ? 0u : static_cast<unsigned>(O_NOFOLLOW));
    how.resolve = RESOLVE_CACHED;
    fd_ = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
  }
  ~CachedPath() {
    if (fd_ >= 0) ::close(fd_);
  }
  CachedPath(const CachedPath&) = delete;
  CachedPath& operator=(const CachedPath&) = delete;
  int fd() const noexcept { return fd_; }

 private:
  int fd_;
};

// Whether `fd`'s file system keeps its files' attributes in the kernel (on a local disk or in
// memory): a statx of its cached ones is exact. A network or FUSE file system's may be stale.
bool attributes_are_the_kernels(int fd) noexcept {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  switch (fs.f_type) {
    case EXT4_SUPER_MAGIC:  // ext2, ext3 too
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool opens_without_waiting(const char* path, int flags) noexcept {
  if ((flags & (O_CREAT | O_TRUNC)) != 0 || (flags & O_TMPFILE) == O_TMPFILE) return false;
  const CachedPath p(path, (flags & O_NOFOLLOW) == 0);
  if (p.fd() < 0) return false;
  struct statx st {};
  return ::statx(p.fd(), "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &st) == 0 &&
         (S_ISREG(st.stx_mode) || S_ISDIR(st.stx_mode));
}

std::optional<fs::Metadata::Fields> cached_stat(int fd) noexcept {
  struct statx st {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &st) != 0) {
    return std::nullopt;
  }
  return statx_fields(st);
}

std::optional<fs::Metadata::Fields> exact_cached_stat(int fd) noexcept {
  if (!attributes_are_the_kernels(fd)) return std::nullopt;
  return cached_stat(fd);
}

std::optional<fs::Metadata::Fields> exact_cached_stat(const char* path, bool follow) noexcept {
  const CachedPath p(path, follow);
  if (p.fd() < 0) return std::nullopt;
  return exact_cached_stat(p.fd());
}

}  // namespace spool::detail::fs_ops
