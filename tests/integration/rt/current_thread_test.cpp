// Current-thread runtime: tasks run inside block_on on the calling thread; a spawn or a
// wake from another thread wakes the block_on thread; another block_on thread takes over
// driving. The promises both flavours make are parameterised over both in their areas'
// files (spawn_test, wake_test, ...: <Area>AnyFlavor.<test>/CurrentThread).
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>
#include <thread>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_gate.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Task;
using spool_rt_test::ManualLeaf;

using spool_rt_test::SignalWhenPending;
using spool_rt_test::value;

Task<std::thread::id> thread_of_task() { co_return std::this_thread::get_id(); }

Task<void> send_from_task(spool::oneshot::Sender<int> tx, int v) {
  tx.send(v);
  co_return;
}

Task<int> await_leaf_then(ManualLeaf leaf, int v) {
  co_await leaf;
  co_return v;
}

TEST(CurrentThread, SpawnedTasksRunOnlyInsideBlockOnOnThatThread) {
  auto rt = spool::Builder::current_thread().build();
  // Written by Body::run (seq_cst store), which runs only inside block_on on this thread;
  // read here (seq_cst load) before block_on (still false) and after it, which pairs with
  // the store by program order on this one thread.
  std::atomic<bool> ran{false};
  struct Body {
    static Task<std::thread::id> run(std::atomic<bool>* ran) {
      ran->store(true);
      co_return std::this_thread::get_id();
    }
  };
  auto h = rt.spawn(Body::run(&ran));
  EXPECT_FALSE(ran.load()) << "nothing runs a current-thread runtime's tasks outside block_on";
  EXPECT_FALSE(h.is_finished());
  EXPECT_EQ(rt.block_on(h), std::this_thread::get_id());
  EXPECT_TRUE(ran.load());
}

TEST(CurrentThread, TasksSpawnedInsideTheRootRunOnTheBlockOnThread) {
  auto rt = spool::Builder::current_thread().build();
  struct Root {
    static Task<bool> run() {
      std::vector<spool::JoinHandle<std::thread::id>> hs;
      for (int i = 0; i < 10; ++i) hs.push_back(spool::spawn(thread_of_task()));
      bool all_here = true;
      for (auto& h : hs) all_here = all_here && (co_await h == std::this_thread::get_id());
      co_return all_here;
    }
  };
  EXPECT_TRUE(rt.block_on(Root::run()));
}

// The root waits on a oneshot that only a task can fill; that task is spawned from another
// thread once the block_on thread has parked: the remote spawn must wake it.
TEST(CurrentThread, RemoteSpawnWakesTheBlockOnThread) {
  // Written by the driver's on_thread_park hook via bump() (seq_cst fetch_add + notify_all);
  // read by wait_at_least on the remote thread (seq_cst load/wait), which pairs with that add.
  // seq_cst is more than enough: it only signals that the driver parked, and publishes no data.
  std::atomic<int> parked{0};
  auto rt =
      spool::Builder::current_thread().on_thread_park([&] { spool_rt_test::bump(parked); }).build();
  auto [tx, rx] = spool::oneshot::channel<int>();
  spool::Handle handle = rt.handle();
  std::promise<std::thread::id> spawned_on;
  std::thread remote([&, tx = std::move(tx)]() mutable {
    spool_rt_test::wait_at_least(parked, 1);
    spool::JoinHandle<void> h = handle.spawn(send_from_task(std::move(tx), 77));
    spawned_on.set_value(std::this_thread::get_id());
    (void)h.id();  // detached
  });
  EXPECT_EQ(rt.block_on(rx), 77);
  remote.join();
  EXPECT_NE(spawned_on.get_future().get(), std::this_thread::get_id());
}

TEST(CurrentThread, RemoteWakeOfAPendingTaskWakesTheBlockOnThread) {
  // Written by the driver's on_thread_park hook via bump() (seq_cst fetch_add + notify_all);
  // read by wait_at_least on the firer thread (seq_cst load/wait), which pairs with that add.
  // seq_cst is more than enough: it only signals that the driver parked, and publishes no data.
  std::atomic<int> parked{0};
  auto rt =
      spool::Builder::current_thread().on_thread_park([&] { spool_rt_test::bump(parked); }).build();
  ManualLeaf leaf;
  auto h = rt.spawn(await_leaf_then(leaf, 5));
  std::thread firer([&] {
    leaf.wait_pending();                      // the task went pending
    spool_rt_test::wait_at_least(parked, 1);  // and the driver parked
    leaf.fire();
  });
  EXPECT_EQ(rt.block_on(h), 5);
  firer.join();
}

TEST(CurrentThread, TasksSurviveBetweenBlockOnCalls) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf leaf;
  auto h = rt.spawn(await_leaf_then(leaf, 3));
  EXPECT_EQ(rt.block_on(value(0)), 0);
  EXPECT_EQ(rt.block_on(rt.spawn(value(1))), 1);  // `h`'s task ran first and went pending
  EXPECT_EQ(leaf.pending_polls(), 1);
  EXPECT_FALSE(h.is_finished());
  std::thread firer([leaf]() mutable { leaf.fire(); });  // woken while nobody drives
  firer.join();
  EXPECT_EQ(rt.block_on(h), 3);
}

TEST(CurrentThread, BlockOnFromAnotherThreadDrivesTheTasks) {
  auto rt = spool::Builder::current_thread().build();
  auto h = rt.spawn(thread_of_task());
  std::promise<std::thread::id> ran_on;
  std::thread blocker([&] { ran_on.set_value(rt.block_on(h)); });
  std::thread::id blocker_id = blocker.get_id();
  blocker.join();
  EXPECT_EQ(ran_on.get_future().get(), blocker_id);
}

// Thread A drives the runtime (it ran the task); thread B, in block_on too, waits for that
// task. A's block_on returns first; the task is woken after that: B must take the core.
TEST(CurrentThread, ABlockOnThreadTakesOverWhenTheDriverLeaves) {
  auto rt = spool::Builder::current_thread().build();
  ManualLeaf a_leaf, t_leaf;
  auto t = rt.spawn(await_leaf_then(t_leaf, 5));
  std::thread a([&] { rt.block_on(a_leaf); });
  t_leaf.wait_pending();  // A drives: it ran the task
  std::latch b_waiting(1);
  std::promise<int> b_result;
  std::thread b([&] {
    b_result.set_value(rt.block_on(SignalWhenPending<spool::JoinHandle<int>>{&t, &b_waiting}));
  });
  b_waiting.wait();
  a_leaf.fire();
  a.join();
  t_leaf.fire();  // only B is left to run the task
  EXPECT_EQ(b_result.get_future().get(), 5);
  b.join();
}

}  // namespace
