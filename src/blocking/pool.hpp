// The blocking pool: threads for spawn_blocking and for block_in_place hand-offs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "task/header.hpp"

namespace spool::detail {

class BlockingPool {
 public:
  struct Config {
    std::size_t max_threads;
    std::chrono::nanoseconds keep_alive;
    std::function<void()> on_thread_start;
    std::function<void()> on_thread_stop;
    // Each thread keeps its owner (the runtime's shared state) alive while it runs, so that
    // a thread left running by a shutdown timeout never outlives what it uses.
    std::weak_ptr<void> owner;
  };

  // A job: a blocking task to run (its notification reference comes with it), or a plain
  // function (a worker core handed off by block_in_place).
  struct Job {
    TaskHeader* task = nullptr;
    std::function<void()> fn;
  };

  explicit BlockingPool(Config config);
  ~BlockingPool();

  // Queues `job`, starting a thread if none is idle and fewer than max_threads run.
  // False after shutdown (the job is not run; the caller keeps what it owns).
  bool spawn(Job job);

  // Refuses new jobs, drops queued tasks (their references are released), and waits for
  // running jobs to finish — at most `timeout` if given; threads still busy then are left
  // to finish on their own.
  void shutdown(std::optional<std::chrono::nanoseconds> timeout);

  std::size_t num_threads();
  std::size_t num_idle_threads();
  std::size_t queue_depth();

 private:
  void run_thread(std::size_t id);
  void join_finished_locked(std::vector<std::thread>& out);

  const Config config_;
  std::mutex mutex_;
  std::condition_variable work_cv_;      // a job arrived, or shutdown
  std::condition_variable finished_cv_;  // a thread exited (shutdown waits on it)
  // All guarded by mutex_:
  std::deque<Job> queue_;
  std::size_t num_threads_ = 0;
  std::size_t num_idle_ = 0;
  std::size_t num_notify_ = 0;  // wake-ups sent to idle threads and not yet consumed
  std::size_t next_id_ = 0;
  bool shutdown_ = false;
  std::unordered_map<std::size_t, std::thread> threads_;
  std::vector<std::thread> finished_;  // exited threads waiting to be joined
};

}  // namespace spool::detail
