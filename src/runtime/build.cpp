#include <cstdlib>
#include <stdexcept>
#include <string>

#include "runtime/shared.hpp"

namespace spool::detail {

std::shared_ptr<RuntimeShared> build_runtime(RuntimeConfig config) {
  if (config.event_interval == 0) {
    throw std::invalid_argument(
        "spool::Builder: event_interval(0): the interval must be at least 1 tick");
  }
  if (config.global_queue_interval == 0) {
    throw std::invalid_argument(
        "spool::Builder: global_queue_interval(0): the interval must be at least 1 tick");
  }
  if (config.max_blocking_threads == 0) {
    throw std::invalid_argument(
        "spool::Builder: max_blocking_threads(0): the blocking pool needs at least one thread");
  }
  if (config.blocking_keep_alive.count() < 0) {
    throw std::invalid_argument("spool::Builder: thread_keep_alive must not be negative");
  }
  if (config.busy_poll.count() < 0) {
    throw std::invalid_argument(
        "spool::Builder: busy_poll must not be negative (0: no busy polling)");
  }
  if (config.timer_resolution <= std::chrono::nanoseconds::zero()) {
    throw std::invalid_argument("spool::Builder: timer_resolution must be positive");
  }
  if (config.timer_wheels != 0 && config.flavor == RuntimeConfig::Flavor::kCurrentThread &&
      config.timer_wheels != 1) {
    throw std::invalid_argument(
        "spool::Builder: timer_wheels(" + std::to_string(config.timer_wheels) +
        ") on a current_thread() runtime: its one thread has one timer wheel; leave the "
        "setting out, or pass 1");
  }
  if (config.flavor == RuntimeConfig::Flavor::kMultiThread &&
      config.timer_wheels > MultiThread::num_workers(config)) {
    throw std::invalid_argument(
        "spool::Builder: timer_wheels(" + std::to_string(config.timer_wheels) +
        ") is more than the runtime's " + std::to_string(MultiThread::num_workers(config)) +
        " workers: a wheel is used only by the workers whose index maps to it; pass at most "
        "worker_threads (or 0 for one per worker)");
  }
  if (config.start_paused && config.flavor == RuntimeConfig::Flavor::kMultiThread) {
    throw std::invalid_argument(
        "spool::Builder: start_paused(true) applies to current_thread() runtimes only: a "
        "multi-thread runtime's workers cannot tell that every task waits, so its clock cannot "
        "auto-advance");
  }
  config.io_backend = resolve_io_backend(config.io_backend);
  // SPOOL_TASK_TIMES=1 measures task times in a program built without the setting (as
  // SPOOL_CONSOLE serves a console), for a console attached to it.
  if (const char* env = std::getenv("SPOOL_TASK_TIMES");
      env != nullptr && env == std::string("1")) {
    config.measure_task_times = true;
  }
  auto rt = std::make_shared<RuntimeShared>(std::move(config));
  rt->start();
  return rt;
}

}  // namespace spool::detail
