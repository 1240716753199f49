// Answers from the kernel's caches (cached_lookup.hpp).
#include "fs/cached_lookup.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "fs/stat_fields.hpp"

namespace spool::detail::fs_ops {

namespace {

// Kernel interfaces newer than Debian 12's headers (Linux 6.1), as the kernel's uapi defines
// them: name_to_handle_at's flag for the 64-bit mount id that is never reused (6.12), and
// statmount (6.8): its number, its request (version 0) and the head of its answer.
constexpr int kHandleMountIdUnique = 0x001;  // AT_HANDLE_MNT_ID_UNIQUE
#if defined(SYS_statmount)
constexpr long kSysStatmount = SYS_statmount;
#elif (defined(__x86_64__) && !defined(__ILP32__)) || defined(__i386__) || defined(__aarch64__) || \
    defined(__arm__) || defined(__riscv)
constexpr long kSysStatmount = 457;  // (MIPS, Alpha and x32 number it otherwise)
#else
constexpr long kSysStatmount = -1;  // unknown here: no file system is told local
#endif
constexpr std::uint64_t kStatmountSuperblock = 0x1;  // STATMOUNT_SB_BASIC
struct MountIdRequest {
  std::uint32_t size;
  std::uint32_t spare;
  std::uint64_t mnt_id;
  std::uint64_t param;
};
struct MountAnswerHead {
  std::uint32_t size;
  std::uint32_t spare;
  std::uint64_t mask;
  std::uint32_t sb_dev_major;
  std::uint32_t sb_dev_minor;
  std::uint64_t sb_magic;
};

// False once a call found the kernel without one of these interfaces (openat2's
// RESOLVE_CACHED, name_to_handle_at's unique mount id): no call then tries the caches. Set
// by any thread, read by every question, relaxed: a question that misses the store only
// makes one more failed try.
std::atomic<bool> kernel_has_interfaces{true};

bool local_magic(std::uint64_t magic) noexcept {
  return magic == EXT4_SUPER_MAGIC || magic == XFS_SUPER_MAGIC || magic == BTRFS_SUPER_MAGIC ||
         magic == TMPFS_MAGIC;
}

// statmount's word on mount `id`: local or not; nullopt where it could not say for now (a
// transient error), which is not remembered.
std::optional<bool> ask_mount(std::uint64_t id) noexcept {
  if (kSysStatmount < 0) return false;
  MountIdRequest request{sizeof(MountIdRequest), 0, id, kStatmountSuperblock};
  alignas(8) std::array<unsigned char, 1024> answer{};  // (the kernel's struct: 512 bytes)
  if (::syscall(kSysStatmount, &request, answer.data(), answer.size(), 0) != 0) {
    // Refused for good: not reachable from this root (a chroot), not in this namespace,
    // denied by policy, or no statmount.
    if (errno == EPERM || errno == ENOENT || errno == EACCES || errno == ENOSYS) return false;
    return std::nullopt;
  }
  MountAnswerHead head;
  std::memcpy(&head, answer.data(), sizeof head);
  return (head.mask & kStatmountSuperblock) != 0 && local_magic(head.sb_magic);
}

// The mounts this thread has asked about, by unique id; the oldest answer makes room.
struct KnownMounts {
  static constexpr std::size_t kSize = 8;
  std::array<std::uint64_t, kSize> ids{};  // 0: no mount
  std::array<bool, kSize> local{};
  std::size_t next = 0;
};
constinit thread_local KnownMounts known_mounts;

// An O_PATH descriptor of `path` if the lookup cache holds it whole (openat2's
// RESOLVE_CACHED, Linux 5.12, fails EAGAIN where the walk would read a directory from a disk
// or leave the kernel's lock-free walk), closed with this object; fd() < 0 otherwise. O_PATH
// opens nothing: no FIFO waits, no device's or file system's open runs.
class CachedPath {
 public:
  CachedPath(const char* path, bool follow) noexcept
      : fd_(open_resolved_cached(path, O_PATH | (follow ? 0 : O_NOFOLLOW))) {}
  ~CachedPath() {
    if (fd_ >= 0) ::close(fd_);
  }
  CachedPath(const CachedPath&) = delete;
  CachedPath& operator=(const CachedPath&) = delete;
  int fd() const noexcept { return fd_; }

  // openat2 with RESOLVE_CACHED: the descriptor, or -1.
  static int open_resolved_cached(const char* path, std::uint64_t flags) noexcept {
    if (!kernel_has_interfaces.load(std::memory_order_relaxed)) return -1;
    open_how how{};
    how.flags = flags | O_CLOEXEC;
    how.resolve = RESOLVE_CACHED;
    const int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how));
    if (fd < 0 && (errno == ENOSYS || errno == EINVAL || errno == E2BIG)) {
      kernel_has_interfaces.store(false, std::memory_order_relaxed);  // (before Linux 5.12)
    }
    return fd;
  }

 private:
  int fd_;
};

bool regular_or_directory(std::filesystem::file_type t) noexcept {
  return t == std::filesystem::file_type::regular || t == std::filesystem::file_type::directory;
}

}  // namespace

bool on_local_file_system(int fd) noexcept {
  // A handle of 0 bytes: the file system's encode_fh only says "too small" (EOVERFLOW), from
  // memory, and the mount id comes with that answer. A file system that cannot encode handles
  // (procfs, sysfs, CIFS, 9p) answers EOPNOTSUPP; a kernel before 6.12, EINVAL.
  if (!kernel_has_interfaces.load(std::memory_order_relaxed)) return false;
  file_handle handle{};
  std::uint64_t id = 0;
  if (::syscall(SYS_name_to_handle_at, fd, "", &handle, &id,
                AT_EMPTY_PATH | kHandleMountIdUnique) != 0 &&
      errno != EOVERFLOW) {
    if (errno == EINVAL) kernel_has_interfaces.store(false, std::memory_order_relaxed);
    return false;
  }
  KnownMounts& known = known_mounts;
  for (std::size_t i = 0; i < KnownMounts::kSize; ++i) {
    if (known.ids[i] == id) return known.local[i];
  }
  const std::optional<bool> local = ask_mount(id);
  if (!local) return false;
  known.ids[known.next] = id;
  known.local[known.next] = *local;
  known.next = (known.next + 1) % KnownMounts::kSize;
  return *local;
}

std::optional<fs::Metadata::Fields> exact_cached_stat(int fd) noexcept {
  struct statx st {};
  if (!on_local_file_system(fd) ||
      ::statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &st) != 0) {
    return std::nullopt;
  }
  return statx_fields(st);
}

std::optional<fs::Metadata::Fields> exact_cached_stat(const char* path, bool follow) noexcept {
  const CachedPath p(path, follow);
  if (p.fd() < 0) return std::nullopt;
  return exact_cached_stat(p.fd());
}

std::optional<CachedOpen> open_cached(const char* path) noexcept {
  // The probe stays open until the check below: its inode cannot be freed, so no other file
  // (a FIFO made there since) can have its number.
  const CachedPath probe(path, true);
  if (probe.fd() < 0) return std::nullopt;
  const auto probed = exact_cached_stat(probe.fd());
  if (!probed || !regular_or_directory(probed->type)) return std::nullopt;
  // The path is looked up again: O_NONBLOCK (cleared after) makes a FIFO put there since the
  // probe open at once rather than wait on this thread for a writer; any file but the probed
  // one is closed, for the slow way.
  const int fd = CachedPath::open_resolved_cached(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct statx st {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &st) != 0 ||
      st.stx_ino != probed->ino || makedev(st.stx_dev_major, st.stx_dev_minor) != probed->dev ||
      !regular_or_directory(file_type_of_mode(st.stx_mode)) || ::fcntl(fd, F_SETFL, 0) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return CachedOpen{fd, statx_fields(st)};
}

}  // namespace spool::detail::fs_ops
