// run_model: runs one Relacy test suite and turns its verdict into an exit code.
#pragma once

#ifndef SPOOL_MODEL_CHECK
#error "model tests are compiled with SPOOL_MODEL_CHECK (see tests/model/CMakeLists.txt)"
#endif

#include <iostream>

#include "spool/detail/atomic.hpp"

namespace spool::model {

/// Runs `Suite` for `iterations` schedules chosen by `scheduler` (Relacy's random scheduler
/// by default: bounded time, a fresh interleaving each iteration). On failure Relacy prints
/// the failing execution's history; returns the process exit code (0: the invariant held
/// in every explored execution).
template <class Suite>
int run_model(const char* name, rl::iteration_t iterations,
              rl::scheduler_type_e scheduler = rl::random_scheduler_type) {
  rl::test_params params;
  params.iteration_count = iterations;
  params.search_type = scheduler;
  std::ostream no_progress(nullptr);  // no progress bar: CTest logs stay short
  params.progress_stream = &no_progress;
  const bool ok = rl::simulate<Suite>(params);
  std::cout << name << ": " << (ok ? "passed" : "FAILED") << " (" << params.stop_iteration
            << " iterations)\n";
  return ok ? 0 : 1;
}

}  // namespace spool::model
