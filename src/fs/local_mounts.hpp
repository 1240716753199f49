// Which mounts keep their files' attributes in the kernel itself (a local disk or memory),
// from /proc/self/mountinfo: on those a cached statx is exact, and an open of a cached regular
// file waits for no server or daemon (cached_lookup.hpp). A network or FUSE file system's
// open and getattr may ask its server; even its statfs does, so the type is read from the
// mount table, never asked of the file system.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>
#include <vector>

namespace spool::detail::fs_ops {

// Whether mount `mnt_id` (statx's stx_mnt_id) on device `dev` (stx_dev) is ext2/3/4, XFS,
// Btrfs or tmpfs. Reads the mount table at the first question, and again when it has
// changed since (the file then polls POLLPRI), under a lock: any thread, no waiting on I/O.
bool is_local_mount(std::uint64_t mnt_id, dev_t dev) noexcept;

// A mount of one of those file systems, as mountinfo lists it.
struct LocalMount {
  std::uint64_t id;
  dev_t dev;
};

// The local mounts that a mountinfo text lists (proc_pid_mountinfo(5)); lines it cannot read
// are skipped.
std::vector<LocalMount> local_mounts_in(std::string_view mountinfo);

}  // namespace spool::detail::fs_ops
