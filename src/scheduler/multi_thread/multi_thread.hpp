// The multi-thread work-stealing scheduler.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "driver/thread_parker.hpp"
#include "runtime/shared.hpp"
#include "scheduler/inject_queue.hpp"
#include "scheduler/multi_thread/idle.hpp"
#include "scheduler/multi_thread/local_queue.hpp"

namespace spool::detail {

// A worker's state that moves with it: block_in_place hands a Core to a new thread.
// Touched only by the thread that holds it.
struct Core {
  std::uint32_t index;         // which worker (and local queue) this is
  std::uint32_t tick = 0;      // tasks run so far; drives the event/global intervals
  bool is_searching = false;   // counted in Idle's searching number
  TaskHeader* lifo = nullptr;  // the LIFO slot: a task woken or spawned by the running task
  std::uint64_t rng;           // xorshift state for picking steal victims
};

// Per-worker state that other threads touch.
struct alignas(64) WorkerShared {
  LocalQueue<> queue;
  ThreadParker parker;
  // Counters: written by the core holder (relaxed increments), read by metrics().
  std::atomic<std::uint64_t> polls{0};
  std::atomic<std::uint64_t> steals{0};
  std::atomic<std::uint64_t> parks{0};
};

class MultiThread final : public RuntimeShared {
 public:
  explicit MultiThread(RuntimeConfig config);
  ~MultiThread() override;

  void start() override;
  void schedule(TaskHeader* task, bool is_yield) noexcept override;
  void block_in_place(const std::function<void()>& fn) override;

 protected:
  void close_and_stop(std::optional<std::chrono::steady_clock::time_point> deadline) override;
  void drain_queues() noexcept override;
  void fill_metrics(RuntimeMetrics& m) override;

 private:
  // Runs the worker loop with `core` on the calling thread until shutdown, or until
  // block_in_place takes the core away.
  void run_worker(Core* core);
  void run_task_on(TaskHeader* task);
  TaskHeader* next_task(Core& core);
  TaskHeader* next_from_inject(Core& core);
  TaskHeader* steal_work(Core& core);
  void park(Core& core);
  void notify_parked() noexcept;
  // True if a task waits in some local queue or in the inject queue.
  bool work_pending() const noexcept;
  void push_local(Core& core, TaskHeader* task) noexcept;
  void schedule_remote(TaskHeader* task) noexcept;
  void transition_from_searching(Core& core) noexcept;
  void worker_thread_main(Core* core);

  const std::uint32_t num_workers_;
  std::vector<std::unique_ptr<WorkerShared>> workers_;
  std::vector<std::unique_ptr<Core>> cores_;
  InjectQueue inject_;
  Idle idle_;
  std::vector<std::thread> threads_;
  // Worker threads still in their loop (a block_in_place hand-off counts as one thread).
  // Decremented by each thread as it leaves (release, under exit_mutex_); shutdown waits
  // for zero under exit_mutex_.
  std::mutex exit_mutex_;
  std::condition_variable exit_cv_;
  std::uint32_t running_ = 0;    // guarded by exit_mutex_
  std::vector<bool> core_left_;  // guarded by exit_mutex_: core's loop ended
};

}  // namespace spool::detail
