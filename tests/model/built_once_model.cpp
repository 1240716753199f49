// Model of BuiltOnce (include/spool/detail/built_once.hpp), which holds a join's books of its
// stolen children (spool/detail/fork_join.hpp's ForkShared).
//
// Invariant: when three threads ask for the value at once (a join and two thieves reaching
// its books together), exactly one of them builds it, and each sees it built: the
// constructor writes a Relacy var, which a thread reading it without a happens-before edge
// from the constructor is reported as a data race.
#include "model/run_model.hpp"
#include "spool/detail/built_once.hpp"

namespace {

constexpr int kThreads = 3;

int constructions = 0;  // Relacy runs its threads as fibers on one thread: a plain count

struct Books {
  Books() noexcept {
    ++constructions;
    payload($) = 42;
  }
  rl::var<int> payload;
};

struct BuiltOnceModel : rl::test_suite<BuiltOnceModel, kThreads> {
  spool::detail::BuiltOnce<Books> books;

  void before() { constructions = 0; }

  void thread(unsigned) {
    Books& b = books.get();
    RL_ASSERT(b.payload($) == 42);
  }

  void after() { RL_ASSERT(constructions == 1); }
};

}  // namespace

int main() { return spool::model::run_model<BuiltOnceModel>("built_once", 100000); }
