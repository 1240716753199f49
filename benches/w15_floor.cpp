// w15-floor: W15 (file_read) with no runtime at all — the floor under any runtime's figure
// on this machine. The same file, made the same way, and the same reads as W15
// (file_read_data.hpp: 64 MiB in the page cache; 64 tasks × 256 reads of 4 KiB at the
// splitmix64 offsets), done by two threads (W15's two workers) that each pread the offset
// lists of half the tasks (tasks t, t + 2, ...) in a plain loop into a buffer of their own:
// one system call per read and nothing else. Every run checks the total of the blocks'
// first u64 against WORKLOADS.md's, and the offsets are checked against its check values
// before anything runs.
// Prints `RESULT floor file_read <median ns per 4 KiB read> ns/op` (median of BENCH_REPS
// runs, default 5, after one warm-up run). Not a spool benchmark: scripts/compare-peers sets
// it beside spool's and the peers' file_read.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "file_read_data.hpp"

namespace {

namespace fr = spool_bench::file_read;

constexpr std::size_t kThreads = 2;

using OffsetLists = std::vector<std::vector<std::uint64_t>>;  // one per task

// Thread `t`'s share: the sum of the first u64 of every block its tasks read.
std::uint64_t read_share(int fd, const OffsetLists& offsets, std::size_t t) {
  std::array<unsigned char, fr::kBlockSize> block{};
  std::uint64_t sum = 0;
  for (std::size_t task = t; task < offsets.size(); task += kThreads) {
    for (std::uint64_t off : offsets[task]) {
      ssize_t n = 0;
      do {
        n = ::pread(fd, block.data(), block.size(), static_cast<off_t>(off));
      } while (n < 0 && errno == EINTR);
      if (n != static_cast<ssize_t>(block.size())) {
        throw std::system_error(n < 0 ? errno : EIO, std::system_category(),
                                "w15-floor: pread at " + std::to_string(off) + " gave " +
                                    std::to_string(n) + " bytes, not 4096");
      }
      sum += fr::first_word(block.data());
    }
  }
  return sum;
}

// One timed run: ns per read.
double run_once(int fd, const OffsetLists& offsets) {
  std::array<std::uint64_t, kThreads> sums{};
  std::array<std::exception_ptr, kThreads> failures{};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        sums[t] = read_share(fd, offsets, t);
      } catch (...) {
        failures[t] = std::current_exception();  // rethrown by the caller, after the join
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  for (const auto& f : failures) {
    if (f) std::rethrow_exception(f);
  }
  std::uint64_t total = 0;
  for (std::uint64_t s : sums) total += s;
  if (total != fr::kExpectedTotal) {
    throw std::runtime_error("w15-floor: wrong total " + std::to_string(total) + ", expected " +
                             std::to_string(fr::kExpectedTotal));
  }
  return std::chrono::duration<double, std::nano>(elapsed).count() /
         static_cast<double>(fr::kTasks * fr::kReadsPerTask);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s   (env: BENCH_REPS, default 5; BENCH_TMPDIR)\n", argv[0]);
    return 2;
  }
  const char* reps_env = std::getenv("BENCH_REPS");
  const int reps = reps_env != nullptr ? std::max(1, std::atoi(reps_env)) : 5;
  try {
    fr::check_offsets();
    OffsetLists offsets;
    for (std::uint64_t t = 0; t < fr::kTasks; ++t) offsets.push_back(fr::offsets(t));
    fr::DataFile file;
    const int fd = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      throw std::system_error(errno, std::system_category(),
                              "w15-floor: open " + file.path().string());
    }
    file.remove();                // the open descriptor keeps the data
    (void)run_once(fd, offsets);  // warm-up
    std::vector<double> runs;
    for (int r = 0; r < reps; ++r) runs.push_back(run_once(fd, offsets));
    ::close(fd);
    std::sort(runs.begin(), runs.end());
    std::printf("RESULT floor file_read %.2f ns/op\n", runs[runs.size() / 2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
