// W15 file_read: 64 tasks each read 256 blocks of 4 KiB at W15's offsets of one file through
// spool::fs::File::read_at, and sum each block's first u64; op = one 4 KiB read. The code
// shape of the tokio peer's w15_file_read (shared/peers/tokio/src/main.rs): one open file
// shared by the tasks, spawned and joined by the root under block_on.
#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "file_read_data.hpp"
#include "harness.hpp"
#include "spool/fs.hpp"
#include "spool/runtime.hpp"

namespace spool_bench {

namespace {

namespace fr = file_read;

spool::Task<std::uint64_t> w15_reader(spool::fs::File* file,
                                      const std::vector<std::uint64_t>* offsets) {
  std::array<unsigned char, fr::kBlockSize> block{};
  std::uint64_t sum = 0;
  for (const std::uint64_t off : *offsets) {
    const std::size_t n = co_await file->read_at(block, off);
    check_in_task(n == block.size(), "file_read: a short read");
    sum += fr::first_word(block.data());
  }
  co_return sum;
}

spool::Task<std::uint64_t> w15_root(spool::fs::File* file,
                                    const std::vector<std::vector<std::uint64_t>>* offsets) {
  std::vector<spool::JoinHandle<std::uint64_t>> readers;
  for (const auto& o : *offsets) readers.push_back(spool::spawn(w15_reader(file, &o)));
  std::uint64_t total = 0;
  for (auto& h : readers) total += co_await h;
  co_return total;
}

void w15_file_read(const Config& cfg) {
  fr::check_offsets();
  fr::DataFile data;
  std::vector<std::vector<std::uint64_t>> offsets;
  for (std::uint64_t t = 0; t < fr::kTasks; ++t) offsets.push_back(fr::offsets(t));
  spool::Runtime rt = make_runtime(cfg);
  spool::fs::File file = rt.block_on(spool::fs::File::open(data.path()));
  data.remove();  // the open file keeps the data
  auto samples = measure(cfg, [&] {
    const auto t0 = Clock::now();
    const std::uint64_t total = rt.block_on(w15_root(&file, &offsets));
    const auto elapsed = Clock::now() - t0;
    if (total != fr::kExpectedTotal) {
      throw std::runtime_error("file_read: the total is " + std::to_string(total) + ", not " +
                               std::to_string(fr::kExpectedTotal));
    }
    return elapsed;
  });
  report_ns_per_op("file_read", samples, fr::kTasks * fr::kReadsPerTask);
}

}  // namespace

std::vector<Workload> file_workloads() {
  return {
      {"W15", "file_read", w15_file_read},
  };
}

}  // namespace spool_bench
