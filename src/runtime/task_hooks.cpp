#include "runtime/task_hooks.hpp"

#include "task/header.hpp"

namespace spool {

// TaskMeta's accessors read the task (and its runtime's channel names) when asked.

std::uint64_t TaskMeta::id() const noexcept {
  return static_cast<const detail::TaskHeader*>(task_)->id;
}

std::string_view TaskMeta::name() const noexcept {
  const char* n = static_cast<const detail::TaskHeader*>(task_)->name;
  return n != nullptr ? std::string_view(n) : std::string_view();
}

std::string_view TaskMeta::channel() const noexcept {
  return static_cast<const detail::LevelTable*>(channels_)->name(
      static_cast<const detail::TaskHeader*>(task_)->channel);
}

SpawnLocation TaskMeta::location() const noexcept {
  const auto* t = static_cast<const detail::TaskHeader*>(task_);
  return SpawnLocation{t->spawn_file, t->spawn_line()};
}

namespace detail {

std::unique_ptr<TaskObserver> make_task_hooks(const RuntimeConfig& config,
                                              const LevelTable& levels) {
  if (!config.on_task_spawn && !config.on_task_terminate && !config.on_before_task_poll &&
      !config.on_after_task_poll && !config.measure_task_times) {
    return nullptr;
  }
  return std::make_unique<TaskObserver>(config.on_task_spawn, config.on_task_terminate,
                                        config.on_before_task_poll, config.on_after_task_poll,
                                        &levels, config.measure_task_times);
}

}  // namespace detail
}  // namespace spool
