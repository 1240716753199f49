// W15 file_read's file and offsets (shared/bench/WORKLOADS.md), one definition for every
// program that runs W15 here (benches/w15-floor, and spool-bench's W15), so that all read
// the same bytes at the same offsets as the tokio peer (its w15_file_read and
// file_read_offsets). Standalone: no spool, only POSIX, for the floor's sake.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "splitmix64.hpp"

namespace spool_bench::file_read {

inline constexpr std::uint64_t kTasks = 64;
inline constexpr std::uint64_t kReadsPerTask = 256;
inline constexpr std::size_t kBlockSize = 4096;
inline constexpr std::uint64_t kBlocks = 16'384;  // 64 MiB / 4 KiB
inline constexpr std::uint64_t kFileSize = kBlocks * kBlockSize;
// WORKLOADS.md's check values: task 0's first offsets, and the sum over all tasks of each
// block's first u64.
inline constexpr std::array<std::uint64_t, 5> kTask0FirstOffsets{48'844'800, 51'392'512, 32'841'728,
                                                                 37'306'368, 37'691'392};
inline constexpr std::uint64_t kExpectedTotal = 68'365'707'776;

// The byte offsets `task` reads, in order: 4096 × (x % 16384) for the first 256 outputs x
// of splitmix64 seeded with 42 + task.
inline std::vector<std::uint64_t> offsets(std::uint64_t task) {
  SplitMix64 g{42 + task};
  std::vector<std::uint64_t> out(kReadsPerTask);
  for (std::uint64_t& o : out) o = kBlockSize * (g.next() % kBlocks);
  return out;
}

// The first u64 of a block read from the file (little endian, whatever the host's order).
inline std::uint64_t first_word(const unsigned char* block) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | block[i];
  return v;
}

// Throws std::runtime_error when offsets() differs from WORKLOADS.md's check values: a
// program reading other offsets would not be running W15.
inline void check_offsets() {
  const std::vector<std::uint64_t> task0 = offsets(0);
  for (std::size_t i = 0; i < kTask0FirstOffsets.size(); ++i) {
    if (task0[i] != kTask0FirstOffsets[i]) {
      throw std::runtime_error("file_read: task 0's offset " + std::to_string(i) + " is " +
                               std::to_string(task0[i]) + ", WORKLOADS.md says " +
                               std::to_string(kTask0FirstOffsets[i]));
    }
  }
  std::uint64_t total = 0;  // the block at offset o starts with the u64 o / 8
  for (std::uint64_t t = 0; t < kTasks; ++t) {
    for (std::uint64_t o : offsets(t)) total += o / 8;
  }
  if (total != kExpectedTotal) {
    throw std::runtime_error("file_read: the offsets' total is " + std::to_string(total) +
                             ", WORKLOADS.md says " + std::to_string(kExpectedTotal));
  }
}

// The W15 file: made by the constructor in BENCH_TMPDIR (as the tokio peer; else TMPDIR,
// else /tmp) as w15-file-read-<pid>.bin, its u64 at byte 8k being k, then read once so that
// it sits in the page cache. Open path(), then remove() it, as the peer does: the open file
// keeps the data and nothing is left behind if the program dies. The destructor removes it
// if that was not done. Errors: std::system_error naming the call and the path.
class DataFile {
 public:
  DataFile() : path_(directory() / ("w15-file-read-" + std::to_string(::getpid()) + ".bin")) {
    try {
      write_all();
      read_once();
    } catch (...) {
      remove();  // (the destructor does not run for a constructor that throws)
      throw;
    }
  }
  ~DataFile() { remove(); }
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  // Unlinks the file (once; later calls do nothing).
  void remove() noexcept {
    if (!removed_) ::unlink(path_.c_str());
    removed_ = true;
  }

 private:
  static std::filesystem::path directory() {
    for (const char* var : {"BENCH_TMPDIR", "TMPDIR"}) {
      const char* dir = std::getenv(var);
      if (dir != nullptr && *dir != '\0') return dir;
    }
    return "/tmp";
  }

  [[noreturn]] void fail(const char* call) const {
    throw std::system_error(errno, std::system_category(),
                            std::string("file_read: ") + call + " " + path_.string());
  }
  [[noreturn]] void close_and_fail(int fd, const char* call) const {
    const int err = errno;
    ::close(fd);
    errno = err;
    fail(call);
  }

  void write_all() {
    std::vector<unsigned char> data(kFileSize);
    for (std::uint64_t k = 0; k < kFileSize / 8; ++k) {
      for (int i = 0; i < 8; ++i) data[8 * k + i] = static_cast<unsigned char>(k >> (8 * i));
    }
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) fail("create");
    for (std::size_t done = 0; done < data.size();) {
      const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) errno = ENOSPC;
      if (n <= 0) close_and_fail(fd, "write");
      done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) fail("close");
  }

  // Reads the whole file, and checks its size: the page cache then holds it.
  void read_once() {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("open");
    std::vector<unsigned char> buf(1 << 20);
    std::uint64_t total = 0;
    for (;;) {
      const ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) close_and_fail(fd, "read");
      if (n == 0) break;
      total += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
    if (total != kFileSize) {
      throw std::runtime_error("file_read: read back " + std::to_string(total) + " bytes of " +
                               path_.string() + ", not " + std::to_string(kFileSize));
    }
  }

  std::filesystem::path path_;
  bool removed_ = false;
};

}  // namespace spool_bench::file_read
