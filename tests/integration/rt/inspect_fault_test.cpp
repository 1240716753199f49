// Another task's backtrace (JoinHandle::backtrace) with a fault while the read holds its
// inspection claim: no memory for the frames, a wake, an abort. The program's operator new is
// replaced, so that the read's first allocation (the frames' vector, made under the claim) can
// fail or run the fault; a binary of its own, since the replacement hides ASan's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <new>
#include <thread>
#include <utility>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"

namespace {
// The next allocation of this thread fails, or first runs this (once).
thread_local bool fail_next_new = false;
thread_local std::function<void()>* at_next_new = nullptr;
}  // namespace

void* operator new(std::size_t size) {
  if (std::exchange(fail_next_new, false)) throw std::bad_alloc();
  if (std::function<void()>* fault = std::exchange(at_next_new, nullptr)) (*fault)();
  if (void* p = std::malloc(size != 0 ? size : 1)) return p;
  throw std::bad_alloc();
}
// (g++ sees free() beside an operator new, not that this operator new is malloc's.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace {

using spool::Task;
using spool_rt_test::ManualLeaf;

Task<int> waits_then_returns(ManualLeaf leaf) {
  co_await leaf;
  co_return 7;
}

class InspectFaultAnyFlavor : public spool_rt_test::RtFlavorTest {
 protected:
  void TearDown() override {
    fail_next_new = false;
    at_next_new = nullptr;
  }
  // Spawns waits_then_returns(leaf) on `rt` and returns once the task is idle, its poll over:
  // a worker may still be in the poll that made the leaf pending, and a read of a running
  // task takes no claim (nor allocates).
  spool::JoinHandle<int> spawn_idle(spool::Runtime& rt, const ManualLeaf& leaf) const {
    auto h = rt.spawn(waits_then_returns(leaf));
    until_pending(rt, leaf);
    while (!h.backtrace().has_value()) std::this_thread::yield();
    return h;
  }
  // Reads `h`'s backtrace with `fault` run at the read's first allocation: whether the read
  // gave one, and (an expectation) that the fault ran.
  static bool read_with(const spool::JoinHandle<int>& h, std::function<void()> fault) {
    at_next_new = &fault;
    const bool read = h.backtrace().has_value();
    EXPECT_EQ(at_next_new, nullptr) << "the fault came during the read";
    return read;
  }
};
SPOOL_RT_INSTANTIATE_FLAVORS(InspectFaultAnyFlavor);

TEST_P(InspectFaultAnyFlavor, NoMemoryForTheFramesLeavesTheTaskAsItWas) {
  auto rt = build();
  ManualLeaf leaf;
  auto h = spawn_idle(rt, leaf);
  fail_next_new = true;
  EXPECT_THROW((void)h.backtrace(), std::bad_alloc);
  EXPECT_FALSE(fail_next_new) << "the read allocated";
  // Given back idle: a wake still runs it, and a second read works.
  EXPECT_TRUE(h.backtrace().has_value());
  leaf.fire();
  EXPECT_EQ(wait(rt, std::move(h)), 7);
}

TEST_P(InspectFaultAnyFlavor, AWakeDuringTheReadRunsTheTaskAfterIt) {
  auto rt = build();
  ManualLeaf leaf;
  auto h = spawn_idle(rt, leaf);
  EXPECT_TRUE(read_with(h, [&leaf] { leaf.fire(); }));
  // The wake found the task claimed; the give-back queued it.
  EXPECT_EQ(wait(rt, std::move(h)), 7);
}

TEST_P(InspectFaultAnyFlavor, AnAbortDuringTheReadCancelsTheTaskAfterIt) {
  auto rt = build();
  ManualLeaf leaf;
  auto h = spawn_idle(rt, leaf);
  spool::AbortHandle abort = h.abort_handle();
  EXPECT_TRUE(read_with(h, [&abort] { abort.abort(); }));
  try {
    (void)wait(rt, std::move(h));
    ADD_FAILURE() << "the task ran to its end";
  } catch (const spool::JoinError& e) {
    EXPECT_TRUE(e.is_cancelled());
  }
}

}  // namespace
