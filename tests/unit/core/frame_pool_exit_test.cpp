// What the frame pool (src/task/frame_pool.cpp) gives back to the system: the frames a
// thread's cache holds when it exits, including those of a thread that only ever freed,
// those freed by its thread_local destructors and by pthread key destructors, and a frame
// allocated after its cache is gone; and what its depot keeps of a burst. Its own binary:
// it replaces the global operator delete to see which blocks are returned. Skipped where
// the pool is off (AddressSanitizer builds: every frame is then plain operator new/delete).
#include <gtest/gtest.h>

#include <pthread.h>
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
// Every block this thread has given to operator delete.
constinit thread_local std::size_t deleted_by_this_thread = 0;

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

bool pool_is_on() {
  Block b;
  b.memory = spool::detail::allocate_frame(kBytes, b.size_class);
  free_block(b);
  return b.size_class != 0;
}

class FramePoolAtThreadExit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pool_is_on()) GTEST_SKIP() << "the frame pool is off in this build";
    unwatch_all();
  }
};

TEST_F(FramePoolAtThreadExit, AThreadThatOnlyFreedFramesReturnsThemWhenItExits) {
  std::vector<Block> blocks;
  // Fewer than a magazine's 64: a thread that never registered its cleanup would keep them.
  for (int i = 0; i < 50; ++i) blocks.push_back(allocate_watched());
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

TEST_F(FramePoolAtThreadExit, AFrameFreedByAThreadLocalDestructorGoesBackToTheSystem) {
  std::thread([] {
    thread_local FreedLate late;
    late.block = allocate_watched();  // the thread's first use of the pool
  }).join();
  EXPECT_EQ(watched_deleted.load(), 1u);
}

// A pthread key destructor runs after every thread_local destructor: one that frees the
// thread's first frame registers the pool's cleanup in that phase.
void free_in_key_destructor(void* block) { free_block(*static_cast<Block*>(block)); }

TEST_F(FramePoolAtThreadExit, AFrameFreedByAPthreadKeyDestructorGoesBackToTheSystem) {
  pthread_key_t key;
  ASSERT_EQ(pthread_key_create(&key, free_in_key_destructor), 0);
  Block block = allocate_watched();
  std::thread([&] { pthread_setspecific(key, &block); }).join();  // never used the pool
  EXPECT_EQ(watched_deleted.load(), 1u);
  pthread_key_delete(key);
}

// Allocates its block when the thread's key destructors run, after the pool's cleanup.
void allocate_in_key_destructor(void* block) {
  *static_cast<Block*>(block) = allocate_watched();
  free_block(*static_cast<Block*>(block));
}

TEST_F(FramePoolAtThreadExit, AFrameAllocatedAfterTheCacheIsGoneIsFreedAtOnce) {
  pthread_key_t key;
  ASSERT_EQ(pthread_key_create(&key, allocate_in_key_destructor), 0);
  Block block{nullptr, 0};
  std::thread([&] {
    Block first = allocate_watched();  // registers the pool's cleanup before the key is set
    free_block(first);
    pthread_setspecific(key, &block);
  }).join();
  EXPECT_EQ(watched_deleted.load(), 2u);  // the first one at the cleanup, the second at once
  EXPECT_NE(block.memory, nullptr);
  pthread_key_delete(key);
}

// A burst of frames of one size, allocated on this thread and freed on another: how many
// of them the freeing thread gave back to the system (the rest the pool kept).
std::size_t frames_returned_after_burst(std::size_t frames, std::size_t bytes = kBytes) {
  std::vector<Block> blocks(frames);
  for (Block& b : blocks) b.memory = spool::detail::allocate_frame(bytes, b.size_class);
  std::size_t returned = 0;
  std::thread([&] {
    const std::size_t before = deleted_by_this_thread;
    for (const Block& b : blocks) free_block(b);
    returned = deleted_by_this_thread - before;  // not what its exit returns, after this
  }).join();
  return returned;
}

// docs/tasks.md, "Frame memory": the depot keeps up to 8 MiB of frames of one size (16 MiB
// of all sizes together); the freeing thread keeps two magazines of 64 frames of each size.
constexpr std::size_t kDepotBytesPerSize = std::size_t{8} << 20;
constexpr std::size_t kBlockBytes = 256;  // kBytes rounded up to its size class
constexpr std::size_t kCachedByTheFreeingThread = 2 * 64;

TEST_F(FramePoolAtThreadExit, TheDepotKeepsAWholeBurstOfFiveMegabytes) {
  // 20,000 frames of 256 bytes (W9's 10,000 tasks of 512 bytes are as much): a burst of
  // spawns this size reuses its memory in the next one, without malloc.
  EXPECT_EQ(frames_returned_after_burst(20'000), 0u);
}

TEST_F(FramePoolAtThreadExit, TheDepotKeepsNoMoreThanItsCapOfOneSizeAndRoomForOthers) {
  constexpr std::size_t kFrames = 4 * kDepotBytesPerSize / kBlockBytes;  // 32 MiB of frames
  const std::size_t kept = kFrames - frames_returned_after_burst(kFrames);
  EXPECT_LE(kept * kBlockBytes, kDepotBytesPerSize + kCachedByTheFreeingThread * kBlockBytes);
  // Another size still has its room: 5 MB of 512-byte frames is kept whole.
  EXPECT_EQ(frames_returned_after_burst(10'000, 500), 0u);
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

namespace {

// Both operator deletes: calling one from the other, g++ 12 takes the inlined malloc of
// operator new and the call of operator delete for a mismatched pair (-Wmismatched-new-delete).
void release(void* p) noexcept {
  if (p == nullptr) return;
  ++deleted_by_this_thread;
  for (auto& w : watched) {
    if (w.load() == p) {
      w.store(nullptr);
      watched_deleted.fetch_add(1);
      break;
    }
  }
  std::free(p);
}

}  // namespace

void operator delete(void* p) noexcept { release(p); }

void operator delete(void* p, std::size_t) noexcept { release(p); }
