// Stress (run under TSan): 10^5 initialisers race on one OnceCell from tasks of a multi-thread
// runtime and from outside threads; exactly one initialiser runs and everyone gets its value.
// Then 2,000 cells, each raced by 8 callers whose first 3 initialisers throw: exactly 4
// initialisers run per cell, 3 callers see the exception and 5 get the value. Each
// initialiser waits until all 8 callers are queued, so each cell's store wakes the 4 callers
// left at once (2,000 times the close-wakes-all path).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"

namespace once_cell_stress_test {
namespace {

using spool::OnceCell;
using spool::Task;

// Yields once before it gives the value, so the other callers pile up behind it.
Task<std::int64_t> slow_value(std::int64_t v) {
  co_await spool::yield_now();
  co_return v;
}

struct CountedInit {
  // Initialisers called: incremented (relaxed) by each call, read after every caller joined.
  std::atomic<std::int64_t>* calls;
  Task<std::int64_t> operator()() const {
    return slow_value(calls->fetch_add(1, std::memory_order_relaxed) + 42);
  }
};

// The address of the value the caller got (all callers must get the same one).
Task<const std::int64_t*> get_address(OnceCell<std::int64_t>* cell,
                                      std::atomic<std::int64_t>* calls) {
  Task<std::int64_t&> get = cell->get_or_init(CountedInit{calls});
  std::int64_t& v = co_await std::move(get);
  co_return &v;
}

TEST(OnceCellStress, OneInitialiserAmongTenToTheFifthRacingCallers) {
  constexpr int kTasks = 99'000;
  constexpr int kThreads = 2;
  constexpr int kThreadCalls = 500;  // 99,000 + 2 x 500 = 10^5 callers
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  OnceCell<std::int64_t> cell;
  std::atomic<std::int64_t> calls{0};
  std::vector<spool::JoinHandle<const std::int64_t*>> tasks;
  tasks.reserve(kTasks);
  for (int i = 0; i < kTasks; ++i) tasks.push_back(rt.spawn(get_address(&cell, &calls)));
  std::atomic<std::int64_t> thread_mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kThreadCalls; ++i) {
        const std::int64_t* v = spool::block_on(get_address(&cell, &calls));
        if (v != cell.get() || *v != 42) thread_mismatches.fetch_add(1);
      }
    });
  }
  std::int64_t mismatches = 0;
  for (auto& t : tasks) {
    const std::int64_t* v = spool::block_on(std::move(t));
    if (v != cell.get() || *v != 42) ++mismatches;
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1) << "more than one initialiser ran";
  EXPECT_EQ(mismatches + thread_mismatches.load(), 0) << "a caller got another value";
}

constexpr std::int64_t kFailing = 3;
constexpr int kCallers = 8;

// One cell of the second test and what its callers count.
struct CellRace {
  OnceCell<std::int64_t> cell;
  // Initialiser calls: incremented (relaxed) by each call, read after every caller joined.
  std::atomic<std::int64_t> calls{0};
  // Callers whose first poll was pending (queued, or initialising): incremented with release
  // by each, once; the initialisers read it with acquire (their gate).
  std::atomic<int> queued{0};
};

// Waits until every caller of its cell is queued, so that the store that sets the cell wakes
// all those left at once (the semaphore's close); then throws for the first `kFailing` calls
// on its cell and gives the value afterwards.
Task<std::int64_t> fail_or_value(std::int64_t call, const std::atomic<int>* queued) {
  while (queued->load(std::memory_order_acquire) < kCallers) co_await spool::yield_now();
  if (call < kFailing) throw std::runtime_error("initialiser failed");
  co_return 7;
}

struct FailingInit {
  CellRace* race;
  Task<std::int64_t> operator()() const {
    return fail_or_value(race->calls.fetch_add(1, std::memory_order_relaxed), &race->queued);
  }
};

// Polls a get_or_init and counts, once, that a poll of it was pending: the caller waits in
// the cell's queue then, or runs an initialiser.
class CountsQueued {
 public:
  CountsQueued(Task<std::int64_t&> get, std::atomic<int>* queued)
      : get_(std::move(get)), queued_(queued) {}
  spool::Poll<std::int64_t&> poll(spool::Context& cx) {
    spool::Poll<std::int64_t&> p = get_.poll(cx);
    if (p.is_pending() && !counted_) {
      counted_ = true;
      queued_->fetch_add(1, std::memory_order_release);
    }
    return p;
  }

 private:
  Task<std::int64_t&> get_;
  std::atomic<int>* queued_;
  bool counted_ = false;
};

// 1 if the caller got the value 7, 0 if its initialiser threw.
Task<int> get_or_fail(CellRace* race) {
  CountsQueued get(race->cell.get_or_init(FailingInit{race}), &race->queued);
  try {
    std::int64_t& v = co_await std::move(get);
    co_return v == 7 ? 1 : 0;
  } catch (const std::runtime_error&) {
    co_return 0;
  }
}

TEST(OnceCellStress, FailingInitialisersPassTheTurnOnExactlyOnceEach) {
  constexpr int kCells = 2'000;
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  std::vector<std::unique_ptr<CellRace>> races;
  std::vector<spool::JoinHandle<int>> tasks;
  for (int c = 0; c < kCells; ++c) {
    races.push_back(std::make_unique<CellRace>());
    for (int i = 0; i < kCallers; ++i) tasks.push_back(rt.spawn(get_or_fail(races[c].get())));
  }
  int got_value = 0;
  for (auto& t : tasks) got_value += spool::block_on(std::move(t));
  int wrong_calls = 0;
  for (auto& r : races) wrong_calls += r->calls.load() != kFailing + 1 ? 1 : 0;
  EXPECT_EQ(wrong_calls, 0) << "a cell ran more or fewer initialisers than its failures + 1";
  EXPECT_EQ(got_value, kCells * (kCallers - kFailing));
}

}  // namespace
}  // namespace once_cell_stress_test
