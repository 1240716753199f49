// The operations spool::fs is made of, one function each, on the paths docs/fs.md describes
// ("Paths"): what the kernel's caches answer on the polling thread (cached_lookup.hpp), a
// worker's ring (ring_ops.hpp), else the blocking pool (run_blocking).
// Results follow io_uring's convention: a value >= 0, or -errno.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fs/fs_state.hpp"
#include "spool/core/task.hpp"
#include "spool/fs/metadata.hpp"

namespace spool::detail::fs_ops {

// A result that carries a value: `err` is 0 or an errno.
template <class T>
struct Outcome {
  int err = 0;
  T value{};
};

// open(2) of `path`: the open file, owning its descriptor, or the errno.
Task<Outcome<std::shared_ptr<FsFile>>> open(std::filesystem::path path, int flags, mode_t mode,
                                            bool readable, bool writable);
// close(2) of f's descriptor (f->fd is -1 afterwards): 0 or -errno.
Task<long> close(std::shared_ptr<FsFile> f);
// read / pread (offset >= 0) into `buf`: the count, or -errno. `exact`: until `buf` is
// full or the end (the count says which), across as many reads as that takes.
Task<long> read(FsFileUse f, std::span<std::byte> buf, std::int64_t offset, bool exact);
// write / pwrite of `buf`: the count, or -errno; `all`: every byte, or the error.
Task<long> write(FsFileUse f, std::span<const std::byte> buf, std::int64_t offset, bool all);
// lseek: the new position, or -errno.
Task<std::int64_t> seek(FsFileUse f, std::int64_t offset, int whence);
// ftruncate, fsync / fdatasync, fallocate (mode 0): 0 or -errno.
Task<long> truncate(FsFileUse f, std::uint64_t len);
Task<long> sync(FsFileUse f, bool data_only);
Task<long> allocate(FsFileUse f, std::uint64_t offset, std::uint64_t len);
// fstat; stat (`follow`) or lstat.
Task<Outcome<fs::Metadata::Fields>> stat_fd(FsFileUse f);
Task<Outcome<fs::Metadata::Fields>> stat_path(std::string path, bool follow);
// rename, unlink, mkdir, rmdir, link, symlink, chmod: 0 or -errno.
Task<long> rename(std::string from, std::string to);
Task<long> unlink(std::string path);
Task<long> mkdir(std::string path, mode_t mode);
Task<long> rmdir(std::string path);
Task<long> link(std::string original, std::string link);
Task<long> symlink(std::string original, std::string link);
Task<long> chmod(std::string path, mode_t mode);
// realpath(3).
Task<Outcome<std::string>> realpath(std::string path);
// opendir: the stream, or the errno.
Task<Outcome<std::shared_ptr<FsDir>>> open_dir(std::string path);
// One batch of d's entries (FsDir::fetch_batch): 0 or -errno.
Task<long> read_dir_batch(std::shared_ptr<FsDir> d);

// Whole jobs: a chain of the operations above where the thread has a ring (read_file,
// mkdir_all), else one blocking call each (whole_ops.cpp):
// The file's whole content.
Task<Outcome<std::vector<std::byte>>> read_file(std::string path);
// Creates or truncates `path` and writes `data`: 0 or -errno.
Task<long> write_file(std::string path, std::vector<std::byte> data);
// What copy_file did: the bytes copied, or (with EINVAL) why it refused to start.
struct Copied {
  enum class Refusal { kNone, kNotRegular, kSameFile };
  std::uint64_t bytes = 0;
  Refusal refusal = Refusal::kNone;
  bool destination_failed = false;  // the error is the destination's open
};
// Copies the regular file `from` to `to` (EISDIR for a directory; refuses another kind of
// file, and `to` naming the same file, which truncating it would destroy).
Task<Outcome<Copied>> copy_file(std::string from, std::string to);
// create_dir_all, remove_dir_all: 0 or -errno.
Task<long> mkdir_all(std::string path);
Task<long> remove_all(std::string path);

}  // namespace spool::detail::fs_ops
