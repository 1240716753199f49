// The current-thread scheduler: tasks run on the thread inside Runtime::block_on.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "driver/thread_parker.hpp"
#include "runtime/shared.hpp"
#include "scheduler/inject_queue.hpp"

namespace spool::detail {

class CurrentThread final : public RuntimeShared {
 public:
  explicit CurrentThread(RuntimeConfig config);
  ~CurrentThread() override;

  void schedule(TaskHeader* task, bool is_yield) noexcept override;
  void block_in_place(const std::function<void()>& fn) override;

  // One block_on thread at a time drives the tasks (holds the "core"); the others wait, and
  // one of them takes over when the driver's block_on returns.
  bool can_drive() noexcept override;
  void drive_until(std::atomic<bool>& root_woken, ReactorSlot& slot) override;
  void release_driver() noexcept override;
  bool wait_for_root(std::atomic<bool>& root_woken, ThreadParker& parker,
                     ReactorSlot& slot) override;
  std::shared_ptr<ThreadParker> driver_parker() noexcept override { return parker_; }

 protected:
  void close_and_stop(std::optional<std::chrono::steady_clock::time_point> deadline) override;
  void drain_queues() noexcept override;
  void fill_metrics(RuntimeMetrics& m) override;

 private:
  // Runs up to event_interval tasks; false when there was none.
  bool run_batch(ReactorSlot& slot);

  InjectQueue inject_;             // schedules from other threads
  std::deque<TaskHeader*> local_;  // schedules from the driving thread; touched only by it
  // The driving thread parks here; remote schedules unpark it. Shared with the root wakers
  // of block_on calls, which may outlive the runtime.
  std::shared_ptr<ThreadParker> parker_ = std::make_shared<ThreadParker>();
  // Exchange(true, acquire) by the thread that wants to drive; store(false, release) when
  // it stops. The acquire/release pair hands over local_ and tick_ between drivers.
  std::atomic<bool> driver_taken_{false};
  // The thread that drives now (for schedule's local/remote choice); written by the driver
  // (relaxed: each thread only compares it with itself).
  std::atomic<std::thread::id> driver_thread_{};
  std::uint32_t tick_ = 0;
  // The parkers of block_on threads waiting in wait_for_root while another thread drives;
  // release_driver unparks them so that one takes over. Guarded by waiters_mutex_.
  std::mutex waiters_mutex_;
  std::vector<ThreadParker*> waiters_;
  // Counters: written by the driver, read by metrics(); relaxed.
  std::atomic<std::uint64_t> polls_{0};
  std::atomic<std::uint64_t> parks_{0};
  std::atomic<std::size_t> local_len_{0};
};

}  // namespace spool::detail
