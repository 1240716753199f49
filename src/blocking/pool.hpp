// The blocking pool: threads for spawn_blocking and for block_in_place hand-offs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "spool/metrics.hpp"
#include "task/header.hpp"
#include "task/owned_tasks.hpp"
#include "task/scheduler_api.hpp"

namespace spool::detail {

class RuntimeShared;

class BlockingPool {
 public:
  struct Config {
    std::size_t max_threads;
    std::chrono::nanoseconds keep_alive;
    std::string thread_name;
    std::function<void()> on_thread_start;
    std::function<void()> on_thread_stop;
    // The runtime the pool's threads belong to: each is marked as its thread (context/
    // current.hpp), so that a shutdown started there does not wait for itself.
    RuntimeShared* runtime;
    // Called (without the pool's lock, on the thread that finished) when a job finished and
    // the pool became idle: no job runs and none waits (see is_idle). May be empty.
    std::function<void()> on_idle;
  };

  // A job: a blocking task to run (its notification reference comes with it), or a plain
  // function (a worker core handed off by block_in_place).
  struct Job {
    TaskHeader* task = nullptr;
    std::function<void()> fn;
  };

  explicit BlockingPool(Config config);
  ~BlockingPool();

  // Each thread keeps `owner` (the runtime's shared state) alive while it runs, so that a
  // thread left running by a shutdown timeout never outlives what it uses. Set once, before
  // the first spawn.
  void set_owner(std::weak_ptr<void> owner) { owner_ = std::move(owner); }

  // Queues `job`, starting a thread if none is idle and fewer than max_threads run.
  // False after shutdown (the job is not run; the caller keeps what it owns). When a new
  // thread is needed but cannot be started, the job stays queued if another thread exists
  // to run it later; if none does, nothing changes and std::system_error is thrown.
  bool spawn(Job job);
  // Runs `job` on a thread now: an idle one, or a new one. Never queues it behind other
  // jobs, never throws: false when no thread is free and none can start (or after
  // shutdown). For block_in_place, whose core must not wait behind a long blocking call.
  bool spawn_now(Job job) noexcept;

  // Refuses new jobs, drops queued tasks (their references are released), and waits for
  // running jobs to finish — at most `timeout` if given; threads still busy then are left
  // to finish on their own.
  // Returns the spawn_blocking calls its threads were still in when it stopped waiting (a
  // timeout), left to finish on their own; 0 once every thread exited.
  std::size_t shutdown(std::optional<std::chrono::nanoseconds> timeout);

  // Takes `task`'s job out of the queue; false if no thread-less job holds it (it runs, ran,
  // or was dropped). The caller owns the job's notification reference.
  bool take_queued(TaskHeader* task) noexcept;
  // True when no job runs and none is queued.
  bool is_idle();
  // Writes the pool's size and load into `m` (read together, under the lock).
  void fill_metrics(RuntimeMetrics& m);

 private:
  void run_thread(std::size_t id);
  // Starts one more thread (mutex_ held). Returns null, or what kept it from starting.
  std::exception_ptr start_thread_locked() noexcept;
  void join_finished_locked(std::vector<std::thread>& out);

  const Config config_;
  std::weak_ptr<void> owner_;
  std::mutex mutex_;
  std::condition_variable work_cv_;      // a job arrived, or shutdown
  std::condition_variable finished_cv_;  // a thread exited (shutdown waits on it)
  // All guarded by mutex_:
  std::deque<Job> queue_;
  std::size_t num_threads_ = 0;
  std::size_t num_idle_ = 0;
  std::size_t running_calls_ = 0;  // threads inside a pool call, not a core's loop (mutex_)
  std::size_t num_notify_ = 0;     // wake-ups sent to idle threads and not yet consumed
  std::size_t next_id_ = 0;
  bool shutdown_ = false;
  std::unordered_map<std::size_t, std::thread> threads_;
  std::vector<std::thread> finished_;  // exited threads waiting to be joined
};

// Schedules blocking tasks (spawn_blocking) on the pool instead of on the workers.
class BlockingScheduler final : public Scheduler {
 public:
  BlockingScheduler(BlockingPool& pool, OwnedTasks& owned) noexcept
      : Scheduler(owned), pool_(pool) {}
  // Queues the task on the pool; on failure (shut down, or no thread could start) the
  // notification is dropped: shutdown cancels the task (spawn_blocking submits through
  // submit() instead, which reports a failure to its caller).
  void schedule(TaskHeader* task, bool is_yield) noexcept override;
  bool take_queued(TaskHeader* task) noexcept override { return pool_.take_queued(task); }
  // The first submission of a new blocking task: false after shutdown; throws
  // std::system_error when no thread could be started to run it.
  bool submit(TaskHeader* task) { return pool_.spawn(BlockingPool::Job{task, {}}); }

 private:
  BlockingPool& pool_;
};

}  // namespace spool::detail
