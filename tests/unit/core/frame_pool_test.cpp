// Frame memory recycling (src/task/frame_pool.cpp): every live frame has its own memory,
// whichever threads allocate and free, and freed memory is handed back out.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "spool/core/task.hpp"

namespace {

struct Block {
  void* memory;
  std::uint16_t size_class;
};

std::vector<Block> allocate_many(std::size_t n, std::size_t bytes) {
  std::vector<Block> blocks(n);
  for (Block& b : blocks) {
    b.memory = spool::detail::allocate_frame(bytes, b.size_class);
    std::memset(b.memory, 0xab, bytes);  // the whole block is usable (ASan checks it)
  }
  return blocks;
}

void free_all(const std::vector<Block>& blocks) {
  for (const Block& b : blocks) spool::detail::deallocate_frame(b.memory, b.size_class);
}

bool all_distinct(const std::vector<Block>& a, const std::vector<Block>& b) {
  std::set<void*> seen;
  for (const Block& x : a) seen.insert(x.memory);
  for (const Block& x : b) seen.insert(x.memory);
  return seen.size() == a.size() + b.size();
}

TEST(FramePool, LiveFramesNeverShareMemoryAcrossThreadHandOffs) {
  constexpr std::size_t kFrames = 5000;  // many magazines' worth, past the depot's turnover
  for (std::size_t bytes : {200u, 256u, 700u, 1500u, 5000u}) {
    // Allocated here, freed on another thread (the spawn-here, finish-there pattern).
    std::vector<Block> first = allocate_many(kFrames, bytes);
    std::thread([&] { free_all(first); }).join();
    // Allocated again while a second live set exists: no block is handed out twice.
    std::vector<Block> second = allocate_many(kFrames, bytes);
    std::vector<Block> third;
    std::thread([&] { third = allocate_many(kFrames, bytes); }).join();
    EXPECT_TRUE(all_distinct(second, third)) << "bytes=" << bytes;
    free_all(second);
    free_all(third);
  }
}

TEST(FramePool, SmallFramesHaveASizeClassAndHugeOnesGoToMalloc) {
  std::uint16_t small_class = 99, huge_class = 99;
  void* small = spool::detail::allocate_frame(300, small_class);
  void* huge = spool::detail::allocate_frame(1 << 20, huge_class);
  EXPECT_EQ(huge_class, 0u);  // 0: plain malloc, whatever the build
  spool::detail::deallocate_frame(small, small_class);
  spool::detail::deallocate_frame(huge, huge_class);
}

}  // namespace
