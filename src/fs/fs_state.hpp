// The state a File and a ReadDir share with their calls in flight.
#pragma once

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>

#include "spool/fs/read_dir.hpp"

namespace spool::detail {

// An open file: the File and each of its calls hold it, so the descriptor stays open until
// the last of them lets go (a dropped call still runs on the pool).
struct FsFile {
  // Stored by the open job before the FsFile leaves it, swapped for -1 by the close job;
  // read by every job, on any pool thread. Atomic (relaxed): the order of the jobs' system
  // calls and the close comes from in_flight, not from this.
  std::atomic<int> fd;
  // The calls that may still use fd: the FsFileUse alive (in a call's Task or its job).
  // Each FsFileUse adds 1 (relaxed: made from the File or another use, so no close can be
  // deciding meanwhile) and subtracts 1 with release once its job's system call is over
  // (the job's before its result is sent: run_blocking); close_on's acquire load that reads
  // 0 pairs with those releases, so every system call on fd happened before the close.
  std::atomic<int> in_flight{0};
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

// A call's hold on an FsFile (null when the File was not open), counted in in_flight for as
// long as it lives: the call's Task and its job each carry one.
class FsFileUse {
 public:
  explicit FsFileUse(std::shared_ptr<FsFile> f) noexcept : f_(std::move(f)) { enter(); }
  FsFileUse(const FsFileUse& other) noexcept : f_(other.f_) { enter(); }
  FsFileUse(FsFileUse&& other) noexcept = default;  // the count moves with it
  FsFileUse& operator=(const FsFileUse&) = delete;
  FsFileUse& operator=(FsFileUse&&) = delete;
  // After the job's last system call: release, so that close_on's acquire sees it done.
  ~FsFileUse() {
    if (f_) f_->in_flight.fetch_sub(1, std::memory_order_release);
  }
  explicit operator bool() const noexcept { return f_ != nullptr; }
  FsFile* operator->() const noexcept { return f_.get(); }
  FsFile& operator*() const noexcept { return *f_; }

 private:
  void enter() noexcept {
    if (f_) f_->in_flight.fetch_add(1, std::memory_order_relaxed);
  }
  std::shared_ptr<FsFile> f_;
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
