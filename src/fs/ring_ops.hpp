// The fs operations that the io_uring backend runs on the polling worker's own ring
// (driver/io/thread_ring.hpp) rather than on the blocking pool. Each answers kNotOnRing where
// it could not run there (no ring on this thread: another backend, a thread that is no
// worker, a kernel without the operation or refusing a ring; a ring that went away with
// its thread before answering), and the caller then takes the pool.
#pragma once

#include <sys/types.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "fs/fs_state.hpp"
#include "spool/core/task.hpp"
#include "spool/fs/metadata.hpp"

namespace spool::detail::fs_ops::ring {

// The answer of an operation the ring did not run.
inline constexpr long kNotOnRing = LONG_MIN;

// The most that one read or write on the ring moves: each copies through a buffer of its
// own, which a larger call would double in memory.
inline constexpr std::size_t kMaxTransfer = std::size_t{1} << 20;
// One read / pread (offset >= 0) into `buf`, one write / pwrite of `buf` (at most
// kMaxTransfer bytes of either): the count, or -errno.
Task<long> read(FsFileUse f, std::span<std::byte> buf, std::int64_t offset);
Task<long> write(FsFileUse f, std::span<const std::byte> buf, std::int64_t offset);
// fsync / fdatasync: 0 or -errno.
Task<long> sync(FsFileUse f, bool data_only);
// fallocate (mode 0): 0 or -errno.
Task<long> allocate(FsFileUse f, std::uint64_t offset, std::uint64_t len);
// statx of f's descriptor, or of `path` (following a last symlink when `follow`), into
// `*fields` (the caller's, alive until the answer): 0 or -errno.
Task<long> stat_fd(FsFileUse f, fs::Metadata::Fields* fields);
Task<long> stat_path(std::string path, bool follow, fs::Metadata::Fields* fields);
// openat(AT_FDCWD): the descriptor, or -errno. A descriptor the caller never takes (a
// dropped Task) is closed.
Task<long> open(std::string path, int flags, mode_t mode);
// close of f's descriptor (f->fd is -1 once the kernel closed it, even when the caller's
// Task was dropped before the answer): 0 or -errno.
Task<long> close(std::shared_ptr<FsFile> f);
// renameat, unlinkat (`dir`: AT_REMOVEDIR), mkdirat, linkat, symlinkat: 0 or -errno.
Task<long> rename(std::string from, std::string to);
Task<long> unlink(std::string path, bool dir);
Task<long> mkdir(std::string path, mode_t mode);
Task<long> link(std::string original, std::string link);
Task<long> symlink(std::string original, std::string link);

}  // namespace spool::detail::fs_ops::ring
