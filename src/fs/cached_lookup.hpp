// Answers from the kernel's caches on the polling thread, for files on a local file system
// (local_mounts.hpp): a path the lookup cache holds whole, and attributes the kernel itself
// keeps. No call here reads a disk or asks a server or a daemon, so a worker makes them inline
// where a blocking-pool job or a ring operation (which io_uring runs on its io-wq threads for
// every statx and every open that may block) costs a hop (docs/fs.md, path 1).
#pragma once

#include <optional>

#include "spool/fs/metadata.hpp"

namespace spool::detail::fs_ops {

// The metadata of open descriptor `fd`, or of `path` (following a last symlink when
// `follow`), where it is exact from the caches; nullopt elsewhere (a network or FUSE file
// system, procfs; a path not cached, Linux before 5.12; an error, which the slow way reports).
std::optional<fs::Metadata::Fields> exact_cached_stat(int fd) noexcept;
std::optional<fs::Metadata::Fields> exact_cached_stat(const char* path, bool follow) noexcept;

// A descriptor that open_cached opened, and its file's metadata then.
struct CachedOpen {
  int fd;
  fs::Metadata::Fields fields;
};

// Opens `path` with the open(2) `flags` (O_CLOEXEC added) where the caches answer at once: a
// regular file or a directory as above, opened without O_CREAT or O_TRUNC. nullopt where the
// slow way must open it (which reports any error).
std::optional<CachedOpen> open_cached(const char* path, int flags) noexcept;

}  // namespace spool::detail::fs_ops
