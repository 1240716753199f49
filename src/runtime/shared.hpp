// RuntimeShared: what every runtime flavour has — config, owned tasks, blocking pool —
// and the interface the flavours implement.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "blocking/pool.hpp"
#include "driver/thread_parker.hpp"
#include "spool/metrics.hpp"
#include "spool/runtime.hpp"
#include "task/owned_tasks.hpp"
#include "task/scheduler_api.hpp"

namespace spool::detail {

class RuntimeShared : public Scheduler, public std::enable_shared_from_this<RuntimeShared> {
 public:
  explicit RuntimeShared(RuntimeConfig config);
  virtual ~RuntimeShared();

  // Starts the threads; called once, right after construction by build_runtime.
  virtual void start();

  TaskHeader* spawn(TaskPromiseBase& promise, std::coroutine_handle<> frame);
  TaskHeader* spawn_blocking(TaskPromiseBase& promise, std::coroutine_handle<> frame);

  bool release(TaskHeader* task) noexcept final { return owned_.remove(task); }

  // The ordered shutdown (idempotent; later calls return at once).
  void shutdown(std::optional<std::chrono::nanoseconds> timeout);

  // Runtime::block_on support. A flavour that runs tasks on the block_on thread lets one
  // such thread at a time drive them: can_drive() claims that role (release_driver() gives
  // it back), and drive_until runs tasks until `root_woken` is set.
  // `root_woken` is the RootWaker's flag: set by its wake() with release ordering on any
  // thread, consumed here by exchange(false) with acquire ordering, which pairs with that
  // release so the root's next poll sees what its waker published.
  virtual bool can_drive() noexcept { return false; }
  virtual void drive_until(std::atomic<bool>& root_woken, ReactorSlot& slot);
  virtual void release_driver() noexcept {}
  // A block_on thread that does not drive parks on its own `parker` until its root is woken
  // (returns false), or until it could claim the driver role (returns true: it now drives).
  virtual bool wait_for_root(std::atomic<bool>& root_woken, ThreadParker& parker,
                             ReactorSlot& slot);
  // The parker the driving thread parks on, which its root waker must unpark as well (null
  // when block_on threads never drive).
  virtual std::shared_ptr<ThreadParker> driver_parker() noexcept { return nullptr; }

  // block_in_place on a thread of this runtime.
  virtual void block_in_place(const std::function<void()>& fn) = 0;

  RuntimeMetrics metrics();
  std::string dump();

  const RuntimeConfig& config() const noexcept { return config_; }
  BlockingPool& blocking() noexcept { return *blocking_; }
  bool is_shutdown() const noexcept { return shutdown_.load(std::memory_order_acquire); }

 protected:
  // Flavour steps of shutdown: close the queues and stop the threads (join them, waiting
  // at most until `deadline` when given); then drop every queued notification.
  virtual void close_and_stop(std::optional<std::chrono::steady_clock::time_point> deadline) = 0;
  virtual void drain_queues() noexcept = 0;
  virtual void fill_metrics(RuntimeMetrics& m) = 0;

  RuntimeConfig config_;
  OwnedTasks owned_;
  // Set once by shutdown() (release); read by workers in their loop (acquire).
  std::atomic<bool> shutdown_{false};

 private:
  // Blocking tasks are scheduled on the pool rather than on the workers.
  class BlockingScheduler final : public Scheduler {
   public:
    explicit BlockingScheduler(RuntimeShared& rt) : rt_(rt) {}
    void schedule(TaskHeader* task, bool) noexcept override;
    bool release(TaskHeader* task) noexcept override { return rt_.owned_.remove(task); }

   private:
    RuntimeShared& rt_;
  };

  TaskHeader* bind_new(TaskHeader* task);

  BlockingScheduler blocking_scheduler_{*this};
  std::unique_ptr<BlockingPool> blocking_;
  std::mutex shutdown_mutex_;  // serialises shutdown()
};

// Marks the calling thread as one of `rt`'s own threads (a worker or a blocking-pool
// thread) for its lifetime: a shutdown started there cannot wait for itself.
class RuntimeThreadGuard {
 public:
  explicit RuntimeThreadGuard(RuntimeShared* rt) noexcept;
  ~RuntimeThreadGuard();
  RuntimeThreadGuard(const RuntimeThreadGuard&) = delete;
  RuntimeThreadGuard& operator=(const RuntimeThreadGuard&) = delete;
};

// The runtime the calling thread belongs to (a worker or blocking thread of it, or a
// thread inside its block_on), or null. Restores the previous one when destroyed.
class CurrentRuntimeGuard {
 public:
  explicit CurrentRuntimeGuard(RuntimeShared* rt) noexcept;
  ~CurrentRuntimeGuard();
  CurrentRuntimeGuard(const CurrentRuntimeGuard&) = delete;
  CurrentRuntimeGuard& operator=(const CurrentRuntimeGuard&) = delete;

 private:
  RuntimeShared* saved_;
};

}  // namespace spool::detail
