// What the kernel's caches say of a path or a descriptor, asked on the polling thread: calls
// that never wait for a disk, a device or a server, so a worker may make them inline where a
// ring operation would cost a hop through the kernel's io-wq threads (docs/fs.md).
#pragma once

#include <optional>

#include "spool/fs/metadata.hpp"

namespace spool::detail::fs_ops {

// Whether an open of `path` with the open(2) `flags` may take io_uring's non-blocking first
// try (submitted without IOSQE_ASYNC): only where the kernel's lookup cache holds the whole
// path, its last component is a regular file or a directory, and `flags` neither create nor
// truncate (which io_uring always sends to its workers). That try adds O_NONBLOCK, with which
// a FIFO opens at once (reading) or fails ENXIO (writing) where open(2) waits, and a device
// may answer otherwise: those, and anything unknown, take the kernel's workers.
bool opens_without_waiting(const char* path, int flags) noexcept;

// The type and size of open descriptor `fd` as the kernel holds them (AT_STATX_DONT_SYNC: no
// round trip to a network file system's server), or nullopt where statx fails.
std::optional<fs::Metadata::Fields> cached_stat(int fd) noexcept;

// The metadata of open descriptor `fd`, or of `path` (following a last symlink when
// `follow`), from the kernel's caches where they are exact: a path the lookup cache holds
// whole, on a file system whose attributes the kernel itself keeps (ext2/3/4, XFS, Btrfs,
// tmpfs). nullopt elsewhere (a network or FUSE file system, whose cached attributes may be
// stale; a path not cached; an error, which the slow way reports).
std::optional<fs::Metadata::Fields> exact_cached_stat(int fd) noexcept;
std::optional<fs::Metadata::Fields> exact_cached_stat(const char* path, bool follow) noexcept;

}  // namespace spool::detail::fs_ops
