#include "blocking/pool.hpp"

#include "context/current.hpp"
#include "driver/time/clock.hpp"
#include "sync/thread.hpp"
#include "task/harness.hpp"

namespace spool::detail {

BlockingPool::BlockingPool(Config config) : config_(std::move(config)) {}

BlockingPool::~BlockingPool() {
  shutdown(std::nullopt);
  // Only a thread that shutdown() left running (and that then released the last reference
  // to the owner) can still be here: it is the current thread, so it cannot join itself.
  for (std::thread& t : finished_) {
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else if (t.joinable()) {
      t.join();
    }
  }
}

bool BlockingPool::spawn(Job job) {
  std::vector<std::thread> to_join;
  {
    std::lock_guard lock(mutex_);
    if (shutdown_) return false;
    queue_.push_back(std::move(job));
    if (num_idle_ > num_notify_) {
      ++num_notify_;
      work_cv_.notify_one();
    } else if (num_threads_ < config_.max_threads) {
      if (std::exception_ptr error = start_thread_locked(); error && num_threads_ == 0) {
        // No thread exists to run the job later: take it back and tell the caller. (With
        // another thread alive, the job waits for it, as tokio's pool does.)
        queue_.pop_back();
        std::rethrow_exception(error);
      }
    }
    join_finished_locked(to_join);
  }
  for (std::thread& t : to_join) t.join();
  return true;
}

bool BlockingPool::spawn_now(Job job) noexcept {
  std::vector<std::thread> to_join;
  bool handed = false;
  {
    std::lock_guard lock(mutex_);
    if (shutdown_) return false;
    try {
      if (num_idle_ > num_notify_) {
        queue_.push_front(std::move(job));  // the idle thread woken here takes it first
        ++num_notify_;
        work_cv_.notify_one();
        handed = true;
      } else if (num_threads_ < config_.max_threads) {
        queue_.push_front(std::move(job));
        handed = start_thread_locked() == nullptr;
        if (!handed) queue_.pop_front();
      }
    } catch (...) {
      // No memory for the queue entry: not handed.
    }
    join_finished_locked(to_join);
  }
  for (std::thread& t : to_join) t.join();
  return handed;
}

std::exception_ptr BlockingPool::start_thread_locked() noexcept {
  std::size_t id = next_id_;
  try {
    // The map entry first: once the thread runs, nothing may throw before it is recorded.
    auto [entry, inserted] = threads_.emplace(id, std::thread());
    try {
      entry->second =
          start_thread(config_.thread_name, [this, id, pin = owner_.lock()] { run_thread(id); });
    } catch (...) {
      threads_.erase(entry);
      throw;
    }
  } catch (...) {
    return std::current_exception();  // nothing is counted for a thread that does not exist
  }
  ++next_id_;
  ++num_threads_;
  return nullptr;
}

void BlockingPool::join_finished_locked(std::vector<std::thread>& out) {
  for (std::thread& t : finished_) out.push_back(std::move(t));
  finished_.clear();
}

void BlockingPool::run_thread(std::size_t id) {
  RuntimeThreadScope own_thread(config_.runtime);
  if (config_.on_thread_start) config_.on_thread_start();
  std::unique_lock lock(mutex_);
  for (;;) {
    bool ran = false;
    while (!queue_.empty()) {
      Job job = std::move(queue_.front());
      queue_.pop_front();
      const bool call = job.task != nullptr;
      if (call) ++running_calls_;
      lock.unlock();
      if (call) {
        run_task(job.task, nullptr);
      } else {
        job.fn();
      }
      ran = true;
      lock.lock();
      if (call) --running_calls_;
    }
    if (shutdown_) break;
    ++num_idle_;
    if (ran && config_.on_idle && num_idle_ == num_threads_) {
      // The last busy thread: is_idle() turns true here, which nothing else announces.
      // (A job queued meanwhile bumps num_notify_, which the wait below checks first.)
      lock.unlock();
      config_.on_idle();
      lock.lock();
    }
    // A deadline, not wait_for: wait_for adds the keep-alive to now, which overflows for a
    // keep-alive of "for ever" (nanoseconds::max()); saturated, that waits for ever.
    bool timed_out = !work_cv_.wait_until(
        lock, saturating_add(std::chrono::steady_clock::now(), config_.keep_alive),
        [&] { return num_notify_ > 0 || shutdown_; });
    --num_idle_;
    if (num_notify_ > 0) --num_notify_;
    if (timed_out && queue_.empty()) break;  // idle for keep_alive: this thread retires
  }
  --num_threads_;
  auto self = threads_.extract(id);
  if (!self.empty()) finished_.push_back(std::move(self.mapped()));
  lock.unlock();
  if (config_.on_thread_stop) config_.on_thread_stop();
  finished_cv_.notify_all();
}

std::size_t BlockingPool::shutdown(std::optional<std::chrono::nanoseconds> timeout) {
  std::deque<Job> dropped;
  std::vector<std::thread> to_join;
  std::size_t calls_left = 0;
  {
    std::unique_lock lock(mutex_);
    if (!shutdown_) {
      shutdown_ = true;
      dropped.swap(queue_);
      work_cv_.notify_all();
    }
    auto all_exited = [&] { return num_threads_ == 0; };
    if (timeout) {
      // (As for the keep-alive: a saturated deadline, so that no timeout overflows.)
      finished_cv_.wait_until(lock, saturating_add(std::chrono::steady_clock::now(), *timeout),
                              all_exited);
    } else {
      finished_cv_.wait(lock, all_exited);
    }
    join_finished_locked(to_join);
    // Threads still running after the timeout are detached: they finish their job alone.
    if (num_threads_ > 0) calls_left = running_calls_;
    for (auto& [id, t] : threads_) t.detach();
    threads_.clear();
  }
  for (std::thread& t : to_join) t.join();
  for (Job& job : dropped) {
    if (job.task) drop_task_refs(job.task);
  }
  return calls_left;
}

void BlockingScheduler::schedule(TaskHeader* task, bool) noexcept {
  try {
    if (pool_.spawn(BlockingPool::Job{task, {}})) return;
  } catch (...) {
    // No thread could start and none exists: the notification is dropped below.
  }
  drop_task_refs(task);  // shut down: the task is (being) cancelled anyway
}

bool BlockingPool::take_queued(TaskHeader* task) noexcept {
  std::lock_guard lock(mutex_);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->task == task) {
      queue_.erase(it);
      return true;
    }
  }
  return false;
}

bool BlockingPool::is_idle() {
  std::lock_guard lock(mutex_);
  return queue_.empty() && num_idle_ == num_threads_;
}

void BlockingPool::fill_metrics(RuntimeMetrics& m) {
  std::lock_guard lock(mutex_);
  m.blocking_threads = num_threads_;
  m.idle_blocking_threads = num_idle_;
  m.blocking_queue_depth = queue_.size();
}

}  // namespace spool::detail
