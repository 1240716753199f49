// Model of the fork deque (include/spool/detail/fork_deque.hpp) with a capacity of 2.
//
// Invariant: every item the owner offers is taken exactly once — popped back by the owner,
// stolen by one of two thieves, or refused by a full deque (the owner keeps it) — and
// whoever takes it sees what the owner wrote before pushing it.
//
// Both ways of fencing pop against steal are checked: seq_cst accesses, and the asymmetric
// pair (which Relacy sees as two seq_cst fences: see spool/detail/atomic.hpp).
//
// Threads: the owner pushes 4 items, popping once in between (so the deque both fills up
// and runs empty while thieves race it for its last item), then pops until empty; each
// thief steals twice. Each item's payload is a Relacy var: reading it without a
// happens-before edge from the push is reported as a data race.
#include "model/run_model.hpp"
#include "spool/detail/fork_deque.hpp"

namespace {

constexpr int kItems = 4;
constexpr int kThreads = 3;

struct Item {
  int index = 0;
  rl::var<int> payload;  // written by the owner before the push, read by the taker
};

using Deque = spool::detail::WorkStealingDeque<2>;
using spool::detail::ForkItem;

// The deque holds ForkItem pointers; the model's items stand in for them.
ForkItem* as_fork_item(Item* item) { return reinterpret_cast<ForkItem*>(item); }
Item* as_item(ForkItem* item) { return reinterpret_cast<Item*>(item); }

template <bool Asymmetric>
struct ForkDequeModel : rl::test_suite<ForkDequeModel<Asymmetric>, kThreads> {
  Item items[kItems];
  Deque deque{Asymmetric};
  int taken[kThreads][kItems] = {};  // per thread: each row written by its thread only

  void before() {
    for (int i = 0; i < kItems; ++i) items[i].index = i;
  }

  void take(unsigned thread, Item* item) {
    RL_ASSERT(item->payload($) == item->index + 1);
    ++taken[thread][item->index];
  }

  void thread(unsigned index) {
    if (index == 0) {
      for (int i = 0; i < kItems; ++i) {
        items[i].payload($) = i + 1;
        bool was_empty = false;
        if (!deque.push(as_fork_item(&items[i]), was_empty)) take(0, &items[i]);  // full
        if (i == 1) {
          if (ForkItem* t = deque.pop()) take(0, as_item(t));
        }
      }
      while (ForkItem* t = deque.pop()) take(0, as_item(t));
      RL_ASSERT(deque.is_empty());
    } else {
      for (int round = 0; round < 2; ++round) {
        if (ForkItem* t = deque.steal()) take(index, as_item(t));
      }
    }
  }

  void after() {
    for (int i = 0; i < kItems; ++i) {
      RL_ASSERT(taken[0][i] + taken[1][i] + taken[2][i] == 1);
    }
  }
};

}  // namespace

int main() {
  const int seq_cst = spool::model::run_model<ForkDequeModel<false>>("fork_deque", 100000);
  const int asymmetric =
      spool::model::run_model<ForkDequeModel<true>>("fork_deque (asymmetric fences)", 100000);
  return seq_cst | asymmetric;
}
