// The multi-thread worker running on this thread, if any.
#pragma once

#include "spool/core/context.hpp"

namespace spool::detail {

class MultiThread;
struct Core;

// A runtime worker's view of itself: which scheduler, and the core it holds (null once
// block_in_place handed the core away).
struct WorkerContext {
  MultiThread* scheduler;
  Core* core;
  ReactorSlot* slot;  // holds the runtime's driver: tasks polled here may park in it
};

// What a worker's thread runs, for enter_executor (context/enter.hpp): the NestedEventLoop
// error names it, and block_in_place recognises it by its address.
inline constexpr char kWorkerExecutor[] = "a spool runtime worker thread";

// Set by MultiThread::run_worker for the length of its loop; null on other threads.
// (constinit: other files read it without a TLS wrapper call.)
extern constinit thread_local WorkerContext* current_worker;

// The core this thread holds as a worker of `scheduler`, or null (another thread, another
// runtime's worker, or a worker whose core block_in_place handed away).
inline Core* held_core(const MultiThread* scheduler) noexcept {
  const WorkerContext* ctx = current_worker;
  return ctx != nullptr && ctx->scheduler == scheduler ? ctx->core : nullptr;
}

}  // namespace spool::detail
