// Misuse gets clear errors: no current runtime, nested event loops, invalid Builder settings.
// The runtime-level errors are the same on both flavours (MisuseAnyFlavor.<test>/MultiThread
// and .../CurrentThread).
#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <string>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_tasks.hpp"

namespace {

using namespace std::chrono_literals;
using spool::Task;

using spool_rt_test::value;

// Runs `fn` and returns the text of the exception of type E it throws ("" if none).
template <class E, class Fn>
std::string what_of(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(Misuse, SpawnWithoutACurrentRuntimeThrowsLogicError) {
  std::string what = what_of<std::logic_error>([] { (void)spool::spawn(value(1)); });
  EXPECT_TRUE(contains(what, "no current runtime")) << what;
}

TEST(Misuse, SpawnBlockingWithoutACurrentRuntimeThrowsLogicError) {
  std::string what =
      what_of<std::logic_error>([] { (void)spool::spawn_blocking([] { return 1; }); });
  EXPECT_TRUE(contains(what, "no current runtime")) << what;
}

TEST(Misuse, HandleCurrentWithoutACurrentRuntimeThrowsLogicError) {
  std::string what = what_of<std::logic_error>([] { (void)spool::Handle::current(); });
  EXPECT_TRUE(contains(what, "no current runtime")) << what;
}

class MisuseAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(MisuseAnyFlavor);

TEST_P(MisuseAnyFlavor, SpawnOnAPlainThreadAfterTheRuntimeWasUsedThereStillThrows) {
  auto rt = build(1);
  EXPECT_EQ(rt.block_on(value(1)), 1);  // entering and leaving block_on restores "none"
  std::string what = what_of<std::logic_error>([] { (void)spool::spawn(value(1)); });
  EXPECT_TRUE(contains(what, "no current runtime")) << what;
}

// Each body tries a nested event loop inside a spawned task (on a worker thread) and
// reports the NestedEventLoop text.
struct Nested {
  static Task<std::string> spool_block_on() {
    try {
      spool::block_on(value(1));
    } catch (const spool::NestedEventLoop& e) {
      co_return std::string(e.what());
    }
    co_return std::string();
  }
  static Task<std::string> runtime_block_on(spool::Handle handle) {
    try {
      handle.block_on(value(1));
    } catch (const spool::NestedEventLoop& e) {
      co_return std::string(e.what());
    }
    co_return std::string();
  }
  static Task<std::string> current_handle_block_on() {
    try {
      spool::Handle::current().block_on(value(1));
    } catch (const spool::NestedEventLoop& e) {
      co_return std::string(e.what());
    }
    co_return std::string();
  }
};

TEST_P(MisuseAnyFlavor, SpoolBlockOnInsideATaskThrowsNestedEventLoop) {
  auto rt = build(1);
  std::string what = wait(rt, rt.spawn(Nested::spool_block_on()));
  EXPECT_TRUE(contains(what, "nested event loop")) << what;
  EXPECT_TRUE(contains(what, "spool::block_on")) << what;
}

TEST_P(MisuseAnyFlavor, RuntimeBlockOnInsideATaskThrowsNestedEventLoop) {
  auto rt = build(1);
  std::string what = wait(rt, rt.spawn(Nested::runtime_block_on(rt.handle())));
  EXPECT_TRUE(contains(what, "nested event loop")) << what;
}

TEST_P(MisuseAnyFlavor, BlockOnOfAnotherRuntimeInsideATaskThrowsNestedEventLoop) {
  auto rt = build(1);
  auto other = build(1);
  std::string what = wait(rt, rt.spawn(Nested::runtime_block_on(other.handle())));
  EXPECT_TRUE(contains(what, "nested event loop")) << what;
}

TEST(Misuse, BlockOnInsideACurrentThreadTaskThrowsNestedEventLoop) {
  auto rt = spool::Builder::current_thread().build();
  auto h = rt.spawn(Nested::current_handle_block_on());
  std::string what = rt.block_on(h);
  EXPECT_TRUE(contains(what, "nested event loop")) << what;
}

TEST_P(MisuseAnyFlavor, BlockOnInsideRuntimeBlockOnThrowsNestedEventLoop) {
  auto rt = build(1);
  std::string what = rt.block_on(Nested::spool_block_on());
  EXPECT_TRUE(contains(what, "nested event loop")) << what;
}

template <class Configure>
std::string build_error(spool::Builder builder, Configure configure) {
  return what_of<std::invalid_argument>([&] { (void)configure(builder).build(); });
}

TEST(Misuse, WorkerThreadsZeroIsRejected) {
  std::string what =
      build_error(spool::Builder::multi_thread(),
                  [](spool::Builder& b) -> spool::Builder& { return b.worker_threads(0); });
  EXPECT_TRUE(contains(what, "worker_threads")) << what;
}

TEST(Misuse, EventIntervalZeroIsRejected) {
  for (auto builder : {spool::Builder::multi_thread(), spool::Builder::current_thread()}) {
    std::string what = build_error(
        builder, [](spool::Builder& b) -> spool::Builder& { return b.event_interval(0); });
    EXPECT_TRUE(contains(what, "event_interval")) << what;
  }
}

TEST(Misuse, GlobalQueueIntervalZeroIsRejected) {
  for (auto builder : {spool::Builder::multi_thread(), spool::Builder::current_thread()}) {
    std::string what = build_error(
        builder, [](spool::Builder& b) -> spool::Builder& { return b.global_queue_interval(0); });
    EXPECT_TRUE(contains(what, "global_queue_interval")) << what;
  }
}

TEST(Misuse, MaxBlockingThreadsZeroIsRejected) {
  for (auto builder : {spool::Builder::multi_thread(), spool::Builder::current_thread()}) {
    std::string what = build_error(
        builder, [](spool::Builder& b) -> spool::Builder& { return b.max_blocking_threads(0); });
    EXPECT_TRUE(contains(what, "max_blocking_threads")) << what;
  }
}

TEST_P(MisuseAnyFlavor, NegativeKeepAliveIsRejected) {
  std::string what = build_error(
      builder(), [](spool::Builder& b) -> spool::Builder& { return b.thread_keep_alive(-1ms); });
  EXPECT_TRUE(contains(what, "thread_keep_alive")) << what;
}

TEST(Misuse, WorkerThreadsOnACurrentThreadRuntimeIsRejected) {
  std::string what =
      build_error(spool::Builder::current_thread(),
                  [](spool::Builder& b) -> spool::Builder& { return b.worker_threads(2); });
  EXPECT_TRUE(contains(what, "worker_threads")) << what;
}

TEST_P(MisuseAnyFlavor, ValidSettingsBuild) {
  auto rt = builder(1)
                .event_interval(1)
                .global_queue_interval(1)
                .max_blocking_threads(1)
                .thread_keep_alive(0ms)
                .build();
  EXPECT_EQ(wait(rt, rt.spawn(value(5))), 5);
}

}  // namespace
