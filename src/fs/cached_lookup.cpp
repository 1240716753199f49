// Answers from the kernel's caches (cached_lookup.hpp).
#include "fs/cached_lookup.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fs/local_mounts.hpp"
#include "fs/stat_fields.hpp"

namespace spool::detail::fs_ops {

namespace {

// openat2 with RESOLVE_CACHED (Linux 5.12): fails EAGAIN where the lookup would read a
// directory from a disk (or leave the kernel's lock-free walk); the descriptor or -1.
int open_resolved_cached(const char* path, std::uint64_t flags) noexcept {
  open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.resolve = RESOLVE_CACHED;
  return static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
}

bool regular_or_directory(std::filesystem::file_type t) noexcept {
  return t == std::filesystem::file_type::regular || t == std::filesystem::file_type::directory;
}

}  // namespace

std::optional<fs::Metadata::Fields> exact_cached_stat(int fd) noexcept {
  struct statx st {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_BASIC_STATS | STATX_MNT_ID,
              &st) != 0 ||
      (st.stx_mask & STATX_MNT_ID) == 0 ||  // (Linux 5.8)
      !is_local_mount(st.stx_mnt_id, makedev(st.stx_dev_major, st.stx_dev_minor))) {
    return std::nullopt;
  }
  return statx_fields(st);
}

std::optional<fs::Metadata::Fields> exact_cached_stat(const char* path, bool follow) noexcept {
  // O_PATH opens nothing: no FIFO waits, no device's or file system's open runs.
  const int fd = open_resolved_cached(path, O_PATH | (follow ? 0 : O_NOFOLLOW));
  if (fd < 0) return std::nullopt;
  auto st = exact_cached_stat(fd);
  ::close(fd);
  return st;
}

std::optional<CachedOpen> open_cached(const char* path, int flags) noexcept {
  if ((flags & (O_CREAT | O_TRUNC)) != 0) return std::nullopt;  // (RESOLVE_CACHED refuses them)
  const auto before = exact_cached_stat(path, true);
  if (!before || !regular_or_directory(before->type)) return std::nullopt;
  // O_NONBLOCK, cleared after: a path made a FIFO since the question opens at once rather than
  // wait on this thread for its peer (or fails ENXIO); it is then closed, for the slow way.
  const int fd = open_resolved_cached(path, static_cast<unsigned>(flags) | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  const auto now = exact_cached_stat(fd);
  if (!now || !regular_or_directory(now->type) || ::fcntl(fd, F_SETFL, flags) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return CachedOpen{fd, *now};
}

}  // namespace spool::detail::fs_ops
