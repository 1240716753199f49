// A runtime shut down from one of its own threads must not wait for itself: dropped there, it
// finishes its shutdown on a detached thread; shutdown_timeout there throws. Its own threads
// are its workers, its blocking-pool threads, and a pool thread that took a worker's core
// over from block_in_place.
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_gate.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Builder;
using spool::Runtime;
using spool::Task;
using spool_rt_test::Gate;
using spool_rt_test::RuntimeFreed;

class OwnThreadShutdown : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(OwnThreadShutdown);

TEST_P(OwnThreadShutdown, RuntimeDroppedInsideItsOwnBlockingCallShutsDownOnAnotherThread) {
  RuntimeFreed freed;
  auto* rt = new Runtime(builder(1).on_thread_start(freed.probe()).build());
  Gate dropped;
  {
    auto call = rt->spawn_blocking([rt, &dropped] {
      delete rt;  // on a blocking-pool thread of rt
      dropped.open();
    });
  }  // detached
  dropped.wait();
  freed.wait();  // the detached shutdown finished and freed the runtime
}

TEST_P(OwnThreadShutdown, ShutdownTimeoutInsideItsOwnBlockingCallThrows) {
  Runtime rt = build(1);
  auto call = rt.spawn_blocking([&rt] {
    try {
      rt.shutdown_timeout(10s);
    } catch (const std::logic_error& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  });
  std::string what = rt.block_on(std::move(call));
  EXPECT_NE(what.find("own threads"), std::string::npos) << what;
}

// Runs on the thread that took the worker's core over: drops the runtime there.
Task<void> drop_runtime(Runtime* rt, Gate* dropped) {
  delete rt;
  dropped->open();
  co_return;
}

// Spawns drop_runtime (into this worker's LIFO slot), then blocks in place until it ran:
// the core, with drop_runtime in it, goes to a blocking-pool thread, which runs it.
Task<void> block_while_the_core_drops_the_runtime(Runtime* rt, Gate* dropped) {
  { auto child = spool::spawn(drop_runtime(rt, dropped)); }  // detached
  spool::block_in_place([dropped] { dropped->wait(); });
  co_return;
}

TEST(OwnThreadShutdownBlockInPlace, RuntimeDroppedOnTheThreadThatTookAWorkersCore) {
  RuntimeFreed freed;
  auto* rt =
      new Runtime(Builder::multi_thread().worker_threads(1).on_thread_start(freed.probe()).build());
  Gate dropped;
  { auto blocker = rt->spawn(block_while_the_core_drops_the_runtime(rt, &dropped)); }  // detached
  dropped.wait();
  freed.wait();
}

}  // namespace
