// Model of LocalQueue (src/scheduler/multi_thread/local_queue.hpp) with a capacity of 4.
//
// Invariant: every item the owner pushes is taken exactly once — popped by the owner,
// stolen (into the stealer's queue, then popped or returned by steal_into), or moved to the
// overflow sink — and whoever takes it sees what the pusher wrote before pushing it.
//
// Threads: the owner pushes 3 items, pops one, pushes 3 more in one push_back_many (part of
// it overflowing when the stealer is slow) and pops the rest; the stealer steals twice and
// drains what it stole. Each item's payload is a Relacy var: reading it without a
// happens-before edge from the push is reported as a data race.
#include <cstdint>

#include "model/run_model.hpp"
#include "scheduler/multi_thread/local_queue.hpp"

namespace {

constexpr int kItems = 6;
constexpr int kSinglePushes = 3;  // then one push_back_many of the rest
constexpr int kThreads = 2;

struct Item {
  int index = 0;
  rl::var<int> payload;  // written by the owner before the push, read by the taker
};

// The overflow sink: only the owner pushes into it, so plain counts suffice.
struct Sink {
  int taken[kItems] = {};
  bool push(Item* item) {
    ++taken[item->index];
    RL_ASSERT(item->payload($) == item->index + 1);
    return true;
  }
  bool push_batch(Item* const* items, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) push(items[i]);
    return true;
  }
};

using Queue = spool::detail::LocalQueue<4, Item*, Sink>;

struct LocalQueueModel : rl::test_suite<LocalQueueModel, kThreads> {
  Item items[kItems];
  Queue owner_queue;
  Queue stealer_queue;
  Sink sink;
  int taken[kThreads][kItems] = {};  // per thread: each row written by its thread only

  void before() {
    for (int i = 0; i < kItems; ++i) items[i].index = i;
  }

  void take(unsigned thread, Item* item) {
    RL_ASSERT(item != nullptr);
    RL_ASSERT(item->payload($) == item->index + 1);
    ++taken[thread][item->index];
  }

  void thread(unsigned index) {
    if (index == 0) {
      auto drop = [](Item*) { RL_ASSERT(false); };  // the sink never refuses
      for (int i = 0; i < kSinglePushes; ++i) {
        items[i].payload($) = i + 1;
        owner_queue.push_back_or_overflow(&items[i], sink, drop);
      }
      if (Item* t = owner_queue.pop()) take(0, t);
      Item* rest[kItems - kSinglePushes];
      for (int i = kSinglePushes; i < kItems; ++i) {
        items[i].payload($) = i + 1;
        rest[i - kSinglePushes] = &items[i];
      }
      owner_queue.push_back_many(rest, kItems - kSinglePushes, sink, drop);
      while (Item* t = owner_queue.pop()) take(0, t);
    } else {
      for (int round = 0; round < 2; ++round) {
        if (Item* t = owner_queue.steal_into(stealer_queue)) take(1, t);
        while (Item* t = stealer_queue.pop()) take(1, t);
      }
    }
  }

  void after() {
    // Every item taken exactly once; both queues are empty (the owner drained its own
    // after its last push, and nothing can be left between a claim and its release).
    for (int i = 0; i < kItems; ++i) {
      RL_ASSERT(taken[0][i] + taken[1][i] + sink.taken[i] == 1);
    }
    RL_ASSERT(owner_queue.is_empty());
    RL_ASSERT(stealer_queue.is_empty());
  }
};

}  // namespace

int main() { return spool::model::run_model<LocalQueueModel>("local_queue", 100000); }
