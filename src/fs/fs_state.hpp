// The state a File and a ReadDir share with their calls in flight.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <mutex>

#include "spool/fs/read_dir.hpp"

namespace spool::detail {

// An open file: the File and each of its calls in flight hold it, so the descriptor stays
// open until the last of them lets go (a dropped call still runs on the pool).
struct FsFile {
  // Stored by the open job before the FsFile leaves it, swapped for -1 by the close job;
  // read by every job, on any pool thread. Atomic (relaxed) because close_on decides "no
  // job holds the file" from use_count(), a relaxed load that orders nothing: the jobs'
  // reads and the close's swap must not race. (A job's system call on fd ended before it
  // let go of the file, so no call still uses fd when the close swaps it.)
  std::atomic<int> fd;
  std::filesystem::path path;
  bool readable;
  bool writable;
  FsFile(int fd_, std::filesystem::path path_, bool readable_, bool writable_)
      : fd(fd_), path(std::move(path_)), readable(readable_), writable(writable_) {}
  ~FsFile() {
    if (const int d = descriptor(); d >= 0) ::close(d);
  }
  // The descriptor, or -1 once closed.
  int descriptor() const noexcept { return fd.load(std::memory_order_relaxed); }
  FsFile(const FsFile&) = delete;
  FsFile& operator=(const FsFile&) = delete;
};

// An open directory stream and the entries fetched from it and not yet given out.
struct FsDir {
  FsDir(DIR* dir_, std::filesystem::path path_) : dir(dir_), path(std::move(path_)) {}
  ~FsDir() { ::closedir(dir); }
  FsDir(const FsDir&) = delete;
  FsDir& operator=(const FsDir&) = delete;
  // Appends up to fs::ReadDir::kBatch entries to `ready` (sets at_end after the last):
  // 0, or the errno of readdir. Takes `mutex` (readdir on one DIR is not thread-safe).
  int fetch_batch();

  std::mutex mutex;  // guards all below: the pool's batch and next_entry's take
  DIR* const dir;
  const std::filesystem::path path;
  std::deque<fs::DirEntry> ready;
  bool at_end = false;
};

}  // namespace spool::detail
