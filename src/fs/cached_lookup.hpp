// Answers from the kernel's caches on the polling thread, for files on a local file system:
// a path the lookup cache holds whole, and attributes the kernel itself keeps. A worker makes
// these calls inline where a blocking-pool job or a ring operation (io_uring runs every statx,
// and every open that may block, on its io-wq threads) would cost a hop (docs/fs.md, path 1).
// What they may still wait for, rarely, docs/fs.md lists (an fanotify listener, a race).
#pragma once

#include <optional>

#include "spool/fs/metadata.hpp"

namespace spool::detail::fs_ops {

// Whether open descriptor `fd` (O_PATH will do) is on ext2/3/4, XFS, Btrfs or tmpfs: the file
// systems that keep their files' attributes in the kernel. Asked without calling into the
// file system (whose getattr or statfs may ask a server): its mount's unique id by
// name_to_handle_at (Linux 6.12), that mount's superblock magic by statmount (6.8), remembered
// per thread (unique ids are never reused). False where the kernel cannot say; once a kernel
// lacks these interfaces, no call here tries them again.
bool on_local_file_system(int fd) noexcept;

// The metadata of open descriptor `fd`, or of `path` (following a last symlink when
// `follow`; the path must be in the lookup cache whole: openat2's RESOLVE_CACHED), from the
// kernel's caches (AT_STATX_DONT_SYNC) where that is exact: on a local file system as above.
// nullopt elsewhere, and on an error, which the slow way then reports.
std::optional<fs::Metadata::Fields> exact_cached_stat(int fd) noexcept;
std::optional<fs::Metadata::Fields> exact_cached_stat(const char* path, bool follow) noexcept;

// A descriptor that open_cached opened, and its file's metadata then.
struct CachedOpen {
  int fd;
  fs::Metadata::Fields fields;
};

// Opens `path` for reading (O_RDONLY, no other open(2) flags but O_CLOEXEC) where the caches
// answer at once: a regular file or a directory as above. nullopt where the slow way must
// open it (which reports any error).
std::optional<CachedOpen> open_cached(const char* path) noexcept;

}  // namespace spool::detail::fs_ops
