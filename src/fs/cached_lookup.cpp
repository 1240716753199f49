// Questions to the kernel's caches from the polling thread (cached_lookup.hpp).
#include "fs/cached_lookup.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/stat_fields.hpp"

namespace spool::detail::fs_ops {

bool opens_without_waiting(const char* path, int flags) noexcept {
  if ((flags & (O_CREAT | O_TRUNC)) != 0 || (flags & O_TMPFILE) == O_TMPFILE) return false;
  // O_PATH opens nothing (no FIFO waits, no device's open runs); RESOLVE_CACHED (Linux 5.12)
  // answers EAGAIN where the lookup would read a directory from a disk. Any failure, openat2
  // missing too, says "not known": the open then goes to the kernel's workers as before.
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC | static_cast<unsigned>(flags & O_NOFOLLOW);
  how.resolve = RESOLVE_CACHED;
  const long fd = ::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
  if (fd < 0) return false;
  struct statx st {};
  const bool plain =
      ::statx(static_cast<int>(fd), "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &st) == 0 &&
      (S_ISREG(st.stx_mode) || S_ISDIR(st.stx_mode));
  ::close(static_cast<int>(fd));
  return plain;
}

std::optional<fs::Metadata::Fields> cached_stat(int fd) noexcept {
  struct statx st {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &st) != 0) {
    return std::nullopt;
  }
  return statx_fields(st);
}

}  // namespace spool::detail::fs_ops
