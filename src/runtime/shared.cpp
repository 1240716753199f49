#include "runtime/shared.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <sstream>
#include <thread>

#include "task/harness.hpp"
#include "task/state.hpp"

namespace spool::detail {

namespace {
// The runtime whose handle Handle::current() returns on this thread, or null.
thread_local RuntimeShared* current = nullptr;
// The runtime this thread is a worker or blocking-pool thread of, or null.
thread_local RuntimeShared* runtime_of_thread = nullptr;
}  // namespace

RuntimeThreadGuard::RuntimeThreadGuard(RuntimeShared* rt) noexcept { runtime_of_thread = rt; }
RuntimeThreadGuard::~RuntimeThreadGuard() { runtime_of_thread = nullptr; }

CurrentRuntimeGuard::CurrentRuntimeGuard(RuntimeShared* rt) noexcept : saved_(current) {
  current = rt;
}
CurrentRuntimeGuard::~CurrentRuntimeGuard() { current = saved_; }

RuntimeShared* current_runtime_ptr() noexcept { return current; }

void throw_no_current_runtime() {
  throw std::logic_error(
      "spool: there is no current runtime on this thread: call this from a task, from "
      "inside Runtime::block_on, or use a Runtime's handle() / spawn() directly");
}

std::shared_ptr<RuntimeShared> current_runtime() {
  return current ? current->shared_from_this() : nullptr;
}

RuntimeShared::RuntimeShared(RuntimeConfig config) : config_(std::move(config)) {}

RuntimeShared::~RuntimeShared() = default;

void RuntimeShared::start() {
  blocking_ = std::make_unique<BlockingPool>(BlockingPool::Config{config_.max_blocking_threads,
                                                                  config_.blocking_keep_alive,
                                                                  [this] {
                                                                    current = this;
                                                                    if (config_.on_thread_start)
                                                                      config_.on_thread_start();
                                                                  },
                                                                  [this] {
                                                                    if (config_.on_thread_stop)
                                                                      config_.on_thread_stop();
                                                                    current = nullptr;
                                                                  },
                                                                  weak_from_this()});
}

TaskHeader* RuntimeShared::bind_new(TaskHeader* t) {
  if (owned_.bind(t)) return t;
  // Shut down already: the task is cancelled at once. Its first notification serves as
  // the claim (consumed by the cancellation), and the list's reference was never taken.
  shutdown_task(t);   // drops one reference: the claim
  drop_task_refs(t);  // the owned-list reference
  return nullptr;
}

TaskHeader* RuntimeShared::spawn(TaskPromiseBase& promise, std::coroutine_handle<> frame) {
  TaskHeader* t = new_task(promise, frame, this, shared_from_this(), 0);
  if (bind_new(t)) schedule(t, false);
  return t;
}

TaskHeader* RuntimeShared::spawn_blocking(TaskPromiseBase& promise, std::coroutine_handle<> frame) {
  TaskHeader* t = new_task(promise, frame, &blocking_scheduler_, shared_from_this(), 0);
  if (bind_new(t)) blocking_scheduler_.schedule(t, false);
  return t;
}

void RuntimeShared::BlockingScheduler::schedule(TaskHeader* task, bool) noexcept {
  // On failure (shut down) the notification is dropped; shutdown cancels the task.
  try {
    if (rt_.blocking_->spawn(BlockingPool::Job{task, {}})) return;
  } catch (...) {
    // Could not queue (no memory, or no thread could start): the task will be cancelled
    // by shutdown, or stays pending; drop the notification either way.
  }
  drop_task_refs(task);
}

// Never called: can_drive() is false unless a flavour overrides both.
void RuntimeShared::drive_until(std::atomic<bool>&, ReactorSlot&) {}

bool RuntimeShared::wait_for_root(std::atomic<bool>& root_woken, ThreadParker& parker,
                                  ReactorSlot& slot) {
  // Acquire pairs with the release in RootWaker::wake (see shared.hpp).
  while (!root_woken.exchange(false, std::memory_order_acquire)) parker.park(slot.hook());
  return false;
}

void RuntimeShared::shutdown(std::optional<std::chrono::nanoseconds> timeout) {
  std::lock_guard lock(shutdown_mutex_);
  if (shutdown_.load(std::memory_order_relaxed)) return;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (timeout) deadline = std::chrono::steady_clock::now() + *timeout;
  // 1. No new task can slip in.
  owned_.close();
  shutdown_.store(true, std::memory_order_release);
  // 2. Stop the schedulers' threads.
  close_and_stop(deadline);
  // 3. The blocking pool: queued calls are dropped, running ones waited for.
  std::optional<std::chrono::nanoseconds> left;
  if (deadline)
    left = std::max(std::chrono::nanoseconds(0), *deadline - std::chrono::steady_clock::now());
  blocking_->shutdown(left);
  // 4. Cancel every task still alive (destructors of their locals run here).
  while (TaskHeader* t = owned_.pop()) shutdown_task(t);
  // 5. Queue entries still hold references to the (now cancelled) tasks.
  drain_queues();
}

RuntimeMetrics RuntimeShared::metrics() {
  RuntimeMetrics m;
  fill_metrics(m);
  m.live_tasks = owned_.size();
  m.blocking_threads = blocking_->num_threads();
  m.idle_blocking_threads = blocking_->num_idle_threads();
  m.blocking_queue_depth = blocking_->queue_depth();
  return m;
}

std::string RuntimeShared::dump() {
  std::ostringstream out;
  std::size_t n = 0;
  owned_.for_each([&](const TaskHeader& t) {
    std::uint64_t s = t.state.load(std::memory_order_relaxed);
    out << "task " << t.id << ": "
        << ((s & kRunning)    ? "running"
            : (s & kNotified) ? "scheduled"
                              : "idle");
    if (s & kCancelled) out << ", cancel requested";
    if (const std::type_info* w = t.waiting_on.load(std::memory_order_relaxed)) {
      int status = 0;
      char* name = abi::__cxa_demangle(w->name(), nullptr, nullptr, &status);
      out << ", waiting on " << (status == 0 && name ? name : w->name());
      std::free(name);
    }
    out << '\n';
    ++n;
  });
  return std::to_string(n) + " live task(s)\n" + out.str();
}

// --- The free functions behind the public headers ---

TaskHeader* spawn_task(RuntimeShared& rt, TaskPromiseBase& promise, std::coroutine_handle<> frame) {
  promise.start_as_outermost(frame);
  return rt.spawn(promise, frame);
}

TaskHeader* spawn_blocking_task(RuntimeShared& rt, TaskPromiseBase& promise,
                                std::coroutine_handle<> frame) {
  promise.start_as_outermost(frame);
  return rt.spawn_blocking(promise, frame);
}

void shutdown_runtime(RuntimeShared& rt, std::optional<std::chrono::nanoseconds> timeout,
                      bool from_destructor) {
  if (runtime_of_thread != &rt) {
    rt.shutdown(timeout);
    return;
  }
  // On one of the runtime's own threads, shutdown would wait for this very thread.
  if (!from_destructor) {
    throw std::logic_error(
        "spool::Runtime::shutdown_timeout called from one of the runtime's own threads (a task "
        "or a blocking call): shutdown waits for those threads, so it would wait for itself; "
        "shut the runtime down from outside it");
  }
  // The Runtime was dropped inside one of its own tasks: finish the shutdown on a
  // separate thread, which keeps the shared state alive until it is done.
  std::thread([keep = rt.shared_from_this()] { keep->shutdown(std::nullopt); }).detach();
}
RuntimeMetrics runtime_metrics(RuntimeShared& rt) { return rt.metrics(); }
std::string runtime_dump(RuntimeShared& rt) { return rt.dump(); }

void block_in_place_impl(const std::function<void()>& fn) {
  if (current == nullptr) {
    fn();
    return;
  }
  current->block_in_place(fn);
}

}  // namespace spool::detail
