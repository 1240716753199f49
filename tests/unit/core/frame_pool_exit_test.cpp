// What the frame pool (src/task/frame_pool.cpp) does when a thread exits: the frames its
// cache holds go back to the system, including those of a thread that only ever freed, and
// a frame freed after the cache is gone (by a later thread_local destructor) too. Its own
// binary: it replaces the global operator delete to see which blocks are returned.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <thread>
#include <vector>

#include "spool/core/task.hpp"

namespace {

// The blocks a test watches, and how many of them operator delete has seen. Written by the
// test thread before the thread under test starts (the start orders them), read by any
// thread's operator delete.
constexpr std::size_t kMaxWatched = 256;
std::array<std::atomic<void*>, kMaxWatched> watched{};
std::atomic<std::size_t> watched_deleted{0};

void watch(void* p) {
  for (auto& w : watched) {
    void* empty = nullptr;
    if (w.compare_exchange_strong(empty, p)) return;
  }
  FAIL() << "more than kMaxWatched blocks watched";
}

void unwatch_all() {
  for (auto& w : watched) w.store(nullptr);
  watched_deleted.store(0);
}

struct Block {
  void* memory;
  std::uint16_t size_class;
};

constexpr std::size_t kBytes = 200;

Block allocate_watched() {
  Block b;
  b.memory = spool::detail::allocate_frame(kBytes, b.size_class);
  watch(b.memory);
  return b;
}

void free_block(const Block& b) { spool::detail::deallocate_frame(b.memory, b.size_class); }

TEST(FramePoolAtThreadExit, AThreadThatOnlyFreedFramesReturnsThemWhenItExits) {
  unwatch_all();
  std::vector<Block> blocks;
  for (int i = 0; i < 50; ++i) blocks.push_back(allocate_watched());  // less than a magazine
  std::thread([&] {
    for (const Block& b : blocks) free_block(b);  // this thread never allocated a frame
  }).join();
  EXPECT_EQ(watched_deleted.load(), blocks.size());
}

// Frees its block when the thread's thread_locals are destroyed: it is constructed before
// the thread's first use of the pool, so it is destroyed after the pool's cache is gone.
struct FreedLate {
  Block block{nullptr, 0};
  ~FreedLate() {
    if (block.memory != nullptr) free_block(block);
  }
};

TEST(FramePoolAtThreadExit, AFrameFreedAfterTheCacheIsGoneGoesBackToTheSystem) {
  unwatch_all();
  std::thread([] {
    thread_local FreedLate late;
    late.block = allocate_watched();  // the thread's first use of the pool
  }).join();
  EXPECT_EQ(watched_deleted.load(), 1u);
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  for (auto& w : watched) {
    if (w.load() == p) {
      w.store(nullptr);
      watched_deleted.fetch_add(1);
      break;
    }
  }
  std::free(p);
}

void operator delete(void* p, std::size_t) noexcept { ::operator delete(p); }
