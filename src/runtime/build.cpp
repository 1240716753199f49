#include "runtime/shared.hpp"
#include "scheduler/current_thread/current_thread.hpp"
#include "scheduler/multi_thread/multi_thread.hpp"

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
  std::shared_ptr<RuntimeShared> rt;
  if (config.flavor == RuntimeConfig::Flavor::kMultiThread) {
    rt = std::make_shared<MultiThread>(std::move(config));
  } else {
    rt = std::make_shared<CurrentThread>(std::move(config));
  }
  rt->start();
  return rt;
}

}  // namespace spool::detail
