// Task hooks (Builder::on_task_spawn, on_task_terminate, on_before_task_poll,
// on_after_task_poll): each called exactly once per event, with the task's TaskMeta; and the
// thread hooks (on_thread_start / stop / park / unpark).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/rt_flavor.hpp"
#include "support/rt_leaf.hpp"
#include "support/rt_tasks.hpp"

namespace {

using spool::Task;
using spool::TaskMeta;
using spool_rt_test::ManualLeaf;

Task<void> nothing() { co_return; }
Task<void> yield_once() { co_await spool::yield_now(); }
using spool_rt_test::await_leaf;

// Every event of every task, by id, under a lock (hooks run on many threads at once).
class EventLog {
 public:
  struct Counts {
    int spawned = 0;
    int before = 0;
    int after = 0;
    int terminated = 0;
    bool poll_open = false;  // between a before and its after
    bool order_broken = false;
  };

  // Which hooks install() sets: all four, or one pair (a runtime observes polls only when
  // it has a poll hook or task times).
  enum class Set { kAll, kSpawnAndTerminate, kPolls };

  spool::Builder& install(spool::Builder& b, Set set = Set::kAll) {
    if (set != Set::kPolls) {
      b.on_task_spawn([this](const TaskMeta& m) {
         at(m.id(), [](Counts& c) { ++c.spawned; });
       }).on_task_terminate([this](const TaskMeta& m) {
        at(m.id(), [](Counts& c) {
          if (c.spawned != 1 || c.poll_open) c.order_broken = true;
          ++c.terminated;
        });
      });
    }
    if (set == Set::kSpawnAndTerminate) return b;
    const bool spawns_seen = set == Set::kAll;
    return b
        .on_before_task_poll([this, spawns_seen](const TaskMeta& m) {
          at(m.id(), [spawns_seen](Counts& c) {
            if ((spawns_seen && c.spawned != 1) || c.poll_open || c.terminated != 0)
              c.order_broken = true;
            c.poll_open = true;
            ++c.before;
          });
        })
        .on_after_task_poll([this](const TaskMeta& m) {
          at(m.id(), [](Counts& c) {
            if (!c.poll_open) c.order_broken = true;
            c.poll_open = false;
            ++c.after;
          });
        });
  }

  Counts get(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    return tasks_[id];
  }
  std::size_t size() {
    std::lock_guard lock(mutex_);
    return tasks_.size();
  }

 private:
  template <class Fn>
  void at(std::uint64_t id, Fn fn) {
    std::lock_guard lock(mutex_);
    fn(tasks_[id]);
  }
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, Counts> tasks_;
};

class TaskHooksAnyFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(TaskHooksAnyFlavor);

// 10^5 tasks (under TSan too: the hooks race with the spawns, polls and completions of other
// threads): every task is spawned, polled and terminated exactly as often as it ran.
TEST_P(TaskHooksAnyFlavor, EachHookOncePerEventFor100kTasks) {
  constexpr int kTasks = 100'000;
  EventLog log;
  std::vector<std::uint64_t> once, twice;
  {
    spool::Builder b = builder();
    auto rt = log.install(b).build();
    std::vector<spool::JoinHandle<void>> handles;
    handles.reserve(kTasks);
    for (int i = 0; i < kTasks; ++i) {
      handles.push_back(i % 2 == 0 ? rt.spawn(nothing()) : rt.spawn(yield_once()));
      (i % 2 == 0 ? once : twice).push_back(handles.back().id());
    }
    for (auto& h : handles) wait(rt, std::move(h));
  }
  ASSERT_EQ(log.size(), static_cast<std::size_t>(kTasks));
  // Each task: spawned once, polled `polls` times (each before paired with its after),
  // terminated once.
  auto check = [&log](const std::vector<std::uint64_t>& ids, int polls) {
    for (std::uint64_t id : ids) {
      auto c = log.get(id);
      ASSERT_TRUE(c.spawned == 1 && c.before == polls && c.after == polls && c.terminated == 1 &&
                  !c.order_broken)
          << "task " << id << ": " << c.spawned << " " << c.before << " " << c.after << " "
          << c.terminated;
    }
  };
  check(once, 1);
  check(twice, 2);
}

// A runtime with only the spawn and terminate hooks polls its tasks without the observer
// (Scheduler::poll_observer): completion still tells the terminate hook once per task,
// before its JoinHandle sees the outcome, whether the task finished, was aborted or was
// cancelled by the shutdown; a runtime with only the poll hooks sees every poll of every task.
TEST_P(TaskHooksAnyFlavor, EitherPairOfHooksAloneSeesEachOfItsEvents) {
  constexpr int kTasks = 1'000;
  for (auto set : {EventLog::Set::kSpawnAndTerminate, EventLog::Set::kPolls}) {
    const bool polls = set == EventLog::Set::kPolls;
    const int terminations = polls ? 0 : 1;
    EventLog log;
    ManualLeaf never, aborted_leaf;
    std::vector<std::uint64_t> ran;
    std::uint64_t pending = 0, aborted = 0;
    {
      spool::Builder b = builder();
      auto rt = log.install(b, set).build();
      std::vector<spool::JoinHandle<void>> handles;
      for (int i = 0; i < kTasks; ++i) {
        handles.push_back(i % 2 == 0 ? rt.spawn(nothing()) : rt.spawn(yield_once()));
        ran.push_back(handles.back().id());
      }
      auto p = rt.spawn(await_leaf(never));
      pending = p.id();
      until_pending(rt, never);
      for (std::size_t i = 0; i < handles.size(); ++i) {
        wait(rt, std::move(handles[i]));
        ASSERT_EQ(log.get(ran[i]).terminated, terminations) << "task " << i;
      }
      auto a = rt.spawn(await_leaf(aborted_leaf));
      aborted = a.id();
      until_pending(rt, aborted_leaf);
      a.abort();
      EXPECT_TRUE(wait(rt, [](spool::JoinHandle<void> h) -> Task<bool> {
        try {
          co_await std::move(h);
        } catch (const spool::JoinError& e) {
          co_return e.is_cancelled();
        }
        co_return false;
      }(std::move(a))));
      EXPECT_EQ(log.get(aborted).terminated, terminations);
    }  // the shutdown cancels `pending`
    for (int i = 0; i < kTasks; ++i) {
      auto c = log.get(ran[static_cast<std::size_t>(i)]);
      const int expected_polls = polls ? (i % 2 == 0 ? 1 : 2) : 0;
      EXPECT_TRUE(c.spawned == terminations && c.terminated == terminations &&
                  c.before == expected_polls && c.after == expected_polls && !c.order_broken)
          << "task " << i << ": " << c.spawned << " " << c.before << " " << c.after << " "
          << c.terminated;
    }
    for (std::uint64_t id : {pending, aborted}) {
      auto c = log.get(id);
      EXPECT_EQ(c.terminated, terminations);
      EXPECT_EQ(c.before, polls ? 1 : 0);
      EXPECT_EQ(c.after, polls ? 1 : 0);
      EXPECT_FALSE(c.order_broken);
    }
  }
}

// A task cancelled before its first poll terminates once, never polled; one left pending at
// shutdown terminates once, at the shutdown.
TEST_P(TaskHooksAnyFlavor, CancelledTasksTerminateOnceWithoutAPoll) {
  EventLog log;
  ManualLeaf never;
  std::uint64_t aborted = 0, pending = 0;
  {
    spool::Builder b = builder();
    auto rt = log.install(b).build();
    auto a = rt.spawn(nothing());
    a.abort();  // before it ran (current-thread) or racing its poll (multi-thread)
    aborted = a.id();
    auto p = rt.spawn(await_leaf(never));
    pending = p.id();
    until_pending(rt, never);
    wait(rt, spool::yield_now());
    EXPECT_EQ(log.get(pending).terminated, 0);
    (void)wait(rt, [](spool::JoinHandle<void> h) -> Task<bool> {
      try {
        co_await std::move(h);
      } catch (const spool::JoinError&) {
      }
      co_return true;
    }(std::move(a)));
    EXPECT_EQ(log.get(aborted).terminated, 1);  // before the JoinHandle saw the outcome
  }
  auto a = log.get(aborted);
  EXPECT_EQ(a.spawned, 1);
  EXPECT_EQ(a.terminated, 1);
  EXPECT_EQ(a.before, a.after);
  EXPECT_LE(a.before, 1);
  auto p = log.get(pending);
  EXPECT_EQ(p.spawned, 1);
  EXPECT_EQ(p.before, 1);
  EXPECT_EQ(p.after, 1);
  EXPECT_EQ(p.terminated, 1);
  EXPECT_FALSE(a.order_broken || p.order_broken);
}

// Hooks and task times together (each task gets a TaskSide: spawn's slow path): every hook
// once per event, and a pending task's snapshot carries its times.
TEST_P(TaskHooksAnyFlavor, HooksWithTaskTimesTellEveryEventAndTimeTheTask) {
  EventLog log;
  ManualLeaf leaf;
  std::uint64_t done = 0, waiting = 0;
  {
    spool::Builder b = builder();
    auto rt = log.install(b.measure_task_times()).build();
    auto d = rt.spawn(nothing());
    done = d.id();
    wait(rt, std::move(d));
    auto w = rt.spawn(await_leaf(leaf));
    waiting = w.id();
    until_pending(rt, leaf);
    int timed = 0;
    for (const auto& s : rt.tasks()) {
      if (s.id == waiting && s.times.has_value()) ++timed;
    }
    EXPECT_EQ(timed, 1);
    leaf.fire();
    wait(rt, std::move(w));
  }
  // `done` ran once; `waiting` was pending once, then woken and polled again.
  for (auto [id, polls] : {std::pair{done, 1}, std::pair{waiting, 2}}) {
    auto c = log.get(id);
    EXPECT_TRUE(c.spawned == 1 && c.before == polls && c.after == polls && c.terminated == 1 &&
                !c.order_broken)
        << "task " << id << ": " << c.spawned << " " << c.before << " " << c.after << " "
        << c.terminated;
  }
}

// What the hooks are told: the id, name, channel and spawn location of the task.
TEST(TaskHooks, TheMetaViewCarriesIdNameChannelAndLocation) {
  struct Seen {
    std::uint64_t id;
    std::string name, channel, file;
    std::uint64_t line;
  };
  std::mutex m;
  std::vector<Seen> spawned, polled, terminated;
  auto record = [&m](std::vector<Seen>& into) {
    return [&m, &into](const TaskMeta& meta) {
      std::lock_guard lock(m);
      into.push_back({meta.id(), std::string(meta.name()), std::string(meta.channel()),
                      meta.location().file, meta.location().line});
    };
  };
  auto rt = spool::Builder::current_thread()
                .levels({spool::Level{"fast"}, spool::Level{"slow"}})
                .on_task_spawn(record(spawned))
                .on_before_task_poll(record(polled))
                .on_task_terminate(record(terminated))
                .build();
  const int line = __LINE__ + 1;
  auto h = rt.spawn_on(rt.channel("fast"), spool::named("conn 7", nothing()));
  auto u = rt.spawn(nothing());
  rt.block_on(std::move(h));
  rt.block_on(std::move(u));
  std::lock_guard lock(m);
  ASSERT_EQ(spawned.size(), 2u);
  ASSERT_EQ(polled.size(), 2u);
  ASSERT_EQ(terminated.size(), 2u);
  for (const auto* list : {&spawned, &polled, &terminated}) {
    const Seen& s = (*list)[0];
    EXPECT_EQ(s.name, "conn 7");
    EXPECT_EQ(s.channel, "fast");
    EXPECT_EQ(s.file, __builtin_FILE());
    EXPECT_EQ(s.line, static_cast<std::uint64_t>(line));
    const Seen& unnamed = (*list)[1];
    EXPECT_EQ(unnamed.name, "");
    EXPECT_EQ(unnamed.channel, "slow");  // the default channel: the lowest level's first
    EXPECT_EQ(unnamed.line, static_cast<std::uint64_t>(line + 1));
  }
  EXPECT_EQ(spawned[0].id, polled[0].id);
  EXPECT_EQ(spawned[0].id, terminated[0].id);
  EXPECT_NE(spawned[0].id, spawned[1].id);
}

// spawn_blocking's calls and a scope's children are tasks too.
TEST(TaskHooks, BlockingCallsAndScopeChildrenAreReported) {
  // Incremented by the hooks on any thread, read after the runtime is dropped (its threads
  // joined, which orders every increment before the reads); seq_cst, the default.
  std::atomic<int> spawned{0}, terminated{0};
  {
    auto rt = spool::Builder::multi_thread()
                  .worker_threads(1)
                  .on_task_spawn([&](const TaskMeta&) { spawned.fetch_add(1); })
                  .on_task_terminate([&](const TaskMeta&) { terminated.fetch_add(1); })
                  .build();
    EXPECT_EQ(rt.block_on(rt.spawn_blocking([] { return 3; })), 3);
    rt.block_on(spool::scope([](spool::Scope& s) -> Task<void> {
      s.spawn(nothing());
      s.spawn(nothing());
      co_return;
    }));
  }  // a scope child may still be completing: its terminate is told by then either way
  EXPECT_EQ(spawned.load(), 3);
  EXPECT_EQ(terminated.load(), 3);
}

// Thread hooks: every thread that starts stops (after the shutdown joined it), and a worker
// unparks only after it parked.
TEST(ThreadHooks, StartStopParkUnparkBalance) {
  // Incremented by the thread hooks on the runtime's threads; read after its threads are
  // joined (which orders every increment first) and, for park/unpark, while they run, as
  // counts only; seq_cst, the default.
  std::atomic<int> started{0}, stopped{0}, parked{0}, unparked{0};
  {
    auto rt = spool::Builder::multi_thread()
                  .worker_threads(2)
                  .on_thread_start([&] { started.fetch_add(1); })
                  .on_thread_stop([&] { stopped.fetch_add(1); })
                  .on_thread_park([&] { parked.fetch_add(1); })
                  .on_thread_unpark([&] {
                    EXPECT_LT(unparked.load(), parked.load());
                    unparked.fetch_add(1);
                  })
                  .build();
    for (int i = 0; i < 100; ++i) spool::block_on(rt.spawn(nothing()));
    EXPECT_EQ(rt.block_on(rt.spawn_blocking([] { return 1; })), 1);
  }
  EXPECT_GE(started.load(), 3);  // two workers and a blocking-pool thread
  EXPECT_EQ(stopped.load(), started.load());
  EXPECT_LE(unparked.load(), parked.load());
}

}  // namespace
