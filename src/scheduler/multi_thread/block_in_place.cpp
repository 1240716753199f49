// block_in_place and the waits that hand a worker's core over like it (docs/scheduler.md).
#include <utility>

#include "context/deferred.hpp"
#include "context/enter.hpp"
#include "driver/io/thread_ring.hpp"
#include "scheduler/multi_thread/multi_thread.hpp"
#include "scheduler/multi_thread/worker_context.hpp"

namespace spool::detail {

void MultiThread::block_in_place(const std::function<void()>& fn) {
  if (held_core(this) == nullptr) {
    const WorkerContext* ctx = current_worker;
    if (ctx != nullptr && ctx->core == nullptr && running_executor_is(kWorkerExecutor)) {
      // A worker whose core an earlier block_in_place of this poll handed away: it runs no
      // loop either (see below).
      ExecutorHandOff no_loop_here;
      fn();
      return;
    }
    fn();  // a blocking-pool thread, or a block_on thread: blocking is fine here
    return;
  }
  WorkerContext* ctx = current_worker;
  // Hand the core (local queue, LIFO slot) to a new thread, which runs the worker loop
  // while this thread blocks. This thread finishes the current poll without a core.
  // (The pool thread keeps the runtime alive, and is marked as its thread.)
  // No thread free to take it now (none idle, none can start, or shutting down): keep the
  // core and block here after all, rather than queue the core behind other blocking calls.
  if (DeferredWakes* d = current_deferred()) requeue_deferred(*ctx->core, *d);  // with the core
  spill_forks(*ctx->core);
  Core* core = std::exchange(ctx->core, nullptr);
  this_thread_forks = nullptr;  // the joins polled here from now on spawn their children
  bool handed = false;
  {
    std::lock_guard lock(exit_mutex_);
    ++running_;  // the thread that takes the core (shutdown waits for it too)
  }
  try {
    handed = blocking_.spawn_now(BlockingPool::Job{nullptr, [this, core] { run_worker(core); }});
  } catch (...) {
    // No memory for the job's function.
  }
  if (!handed) {
    {
      std::lock_guard lock(exit_mutex_);
      --running_;
    }
    // This thread blocks with its core after all: the LIFO slot's task (a spilled fork
    // child, say) goes where other workers can steal it.
    ctx->core = core;
    this_thread_forks = &workers_[core->index]->forks;
    if (TaskHeader* t = std::exchange(core->lifo, nullptr)) schedule(t, true);  // its queue
  }
  end_this_thread_ring();  // nothing may wait on this thread's ring while it blocks
  if (!handed) {
    // With its core: a block_on inside is refused (it would hold the core's tasks), with a
    // message that says why here and not on another call.
    ExecutorRenamed kept_core(
        "a spool runtime worker in block_in_place that kept its core, since no blocking-pool "
        "thread was free to take it (a block_on here would stall the core's tasks; "
        "Builder::max_blocking_threads allows more)");
    fn();
    return;
  }
  // The core's loop runs on the new thread: this one runs none while `fn` blocks, so `fn`
  // may call block_on (docs/adopting.md), as on a blocking-pool thread.
  ExecutorHandOff no_loop_here;
  fn();
}

void MultiThread::block_off_core(const std::function<void()>& fn) {
  Core* core = held_core(this);
  if (core == nullptr) {
    fn();
    return;
  }
  // Tasks that yielded wait in this thread's deferred list, which would block with it.
  if (DeferredWakes* d = current_deferred()) requeue_deferred(*core, *d);
  const WorkerShared& w = *workers_[core->index];
  if (core->lifo != nullptr || has_local_work(w) || !w.forks.is_empty()) {
    block_in_place(fn);
  } else {
    end_this_thread_ring();  // (as block_in_place)
    fn();
  }
}

}  // namespace spool::detail
