// BlockFifo (src/scheduler/block_fifo.hpp), the inject queue's storage, on one thread: FIFO
// order across blocks, partial batches, the reuse of emptied blocks, and the links that take
// over past max_blocks.
#include "scheduler/block_fifo.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace block_fifo_test {
namespace {

struct Item {
  int id = 0;
  Item* next = nullptr;
};

using Fifo = spool::detail::BlockFifo<Item, &Item::next>;
constexpr std::size_t kSlots = Fifo::kSlotsPerBlock;

struct BlockFifoTest : ::testing::Test {
  std::vector<Item> items;
  BlockFifoTest() : items(4 * kSlots) {
    for (std::size_t i = 0; i < items.size(); ++i) items[i].id = static_cast<int>(i);
  }
  void push(Fifo& f, std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) f.push_back(&items[i]);
  }
  // Pops in batches of `batch` until empty; the ids in the order they came.
  static std::vector<int> drain(Fifo& f, std::size_t batch) {
    std::vector<int> ids;
    std::vector<Item*> out(batch);
    while (std::size_t n = f.pop_front(out.data(), batch)) {
      for (std::size_t i = 0; i < n; ++i) ids.push_back(out[i]->id);
    }
    return ids;
  }
  static std::vector<int> range(int from, int to) {
    std::vector<int> r;
    for (int i = from; i < to; ++i) r.push_back(i);
    return r;
  }
};

TEST_F(BlockFifoTest, EmptyPopsNothing) {
  Fifo f(8);
  Item* out[4] = {};
  EXPECT_EQ(f.pop_front(out, 4), 0u);
  EXPECT_EQ(f.len(), 0u);
  EXPECT_EQ(f.blocks(), 0u);
}

TEST_F(BlockFifoTest, KeepsOrderAcrossBlocksInBatchesThatStraddleThem) {
  Fifo f(8);
  const std::size_t n = 2 * kSlots + 5;
  push(f, 0, n);
  EXPECT_EQ(f.len(), n);
  EXPECT_EQ(f.blocks(), 3u);
  EXPECT_EQ(drain(f, 50), range(0, static_cast<int>(n)));
  EXPECT_EQ(f.len(), 0u);
  EXPECT_EQ(f.blocks(), 1u);  // the last block stays for the next push
}

TEST_F(BlockFifoTest, InterleavedPushesAndPopsStayInOrder) {
  Fifo f(8);
  std::vector<int> popped;
  Item* out[7];
  std::size_t pushed = 0;
  while (pushed < items.size()) {
    const std::size_t to = std::min(items.size(), pushed + 11);
    push(f, pushed, to);
    pushed = to;
    const std::size_t n = f.pop_front(out, 7);
    for (std::size_t i = 0; i < n; ++i) popped.push_back(out[i]->id);
    ASSERT_EQ(f.len(), pushed - popped.size());
  }
  for (int id : drain(f, 7)) popped.push_back(id);
  EXPECT_EQ(popped, range(0, static_cast<int>(items.size())));
}

TEST_F(BlockFifoTest, PastMaxBlocksItemsTakeTheirLinksAndStayInOrder) {
  Fifo f(1);
  push(f, 0, kSlots + 3);  // one block's worth in slots, 3 linked
  EXPECT_EQ(f.blocks(), 1u);
  EXPECT_EQ(f.len(), kSlots + 3);
  EXPECT_EQ(items[kSlots].next, &items[kSlots + 1]);  // linked through the items
  // The block empties while 3 are still linked: later pushes still queue behind them.
  std::vector<Item*> out(kSlots);
  ASSERT_EQ(f.pop_front(out.data(), kSlots), kSlots);
  EXPECT_EQ(f.len(), 3u);
  push(f, kSlots + 3, kSlots + 5);
  EXPECT_EQ(f.len(), 5u);
  EXPECT_EQ(drain(f, 4), range(static_cast<int>(kSlots), static_cast<int>(kSlots) + 5));
  EXPECT_EQ(f.len(), 0u);
  // Drained, the block takes pushes again: no links.
  push(f, 0, 2);
  EXPECT_EQ(items[0].next, nullptr);
  EXPECT_EQ(f.blocks(), 1u);
  EXPECT_EQ(drain(f, 4), range(0, 2));
}

TEST_F(BlockFifoTest, DrainedBlocksAreLetGoDownToOne) {
  Fifo f(3);
  for (int round = 0; round < 5; ++round) {
    push(f, 0, 3 * kSlots);
    EXPECT_EQ(f.blocks(), 3u);
    EXPECT_EQ(f.len(), 3 * kSlots);
    EXPECT_EQ(drain(f, 64), range(0, static_cast<int>(3 * kSlots)));
    EXPECT_EQ(f.blocks(), 1u);
  }
  // The cap counts blocks in use, not the spares: a fourth block's worth links.
  push(f, 0, 4 * kSlots);
  EXPECT_EQ(f.blocks(), 3u);
  EXPECT_NE(items[3 * kSlots].next, nullptr);
  EXPECT_EQ(drain(f, 64), range(0, static_cast<int>(4 * kSlots)));
}

// Spare blocks come back unlinked: a reused spare still pointing at the other spare would
// put that block in the chain twice, which the destructor frees twice (ASan reports it).
TEST_F(BlockFifoTest, AReusedSpareBlockIsUnlinkedFromTheOthers) {
  {
    Fifo f(4);
    push(f, 0, 3 * kSlots);
    EXPECT_EQ(drain(f, 64).size(), 3 * kSlots);  // two blocks become spares
    push(f, 0, kSlots + 1);                      // the tail, then a spare
    EXPECT_EQ(f.blocks(), 2u);
    EXPECT_EQ(drain(f, 64), range(0, static_cast<int>(kSlots) + 1));
    push(f, 0, kSlots + 1);  // the new tail, then the other spare: left for the destructor
    EXPECT_EQ(f.len(), kSlots + 1);
  }
}

}  // namespace
}  // namespace block_fifo_test
