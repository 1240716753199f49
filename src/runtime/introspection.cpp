// What a runtime says about its live tasks: Runtime::dump()'s text and Runtime::tasks()'
// snapshots, both read from the owned-task list.
#include <cxxabi.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/shared.hpp"
#include "task/state.hpp"

namespace spool::detail {

std::string RuntimeShared::dump() {
  std::ostringstream out;
  std::size_t n = 0;
  owned_.for_each([&](const TaskHeader& t) {
    describe(t, out);
    ++n;
  });
  return std::to_string(n) + " live task(s)\n" + out.str();
}

namespace {

// What a task's state word says it is doing.
TaskSnapshot::State state_of(std::uint64_t state) noexcept {
  if (state & kRunning) return TaskSnapshot::State::kRunning;
  if (state & kNotified) return TaskSnapshot::State::kScheduled;
  return TaskSnapshot::State::kIdle;
}

const char* state_name(TaskSnapshot::State state) noexcept {
  switch (state) {
    case TaskSnapshot::State::kRunning:
      return "running";
    case TaskSnapshot::State::kScheduled:
      return "scheduled";
    case TaskSnapshot::State::kIdle:
      break;
  }
  return "idle";
}

}  // namespace

std::vector<TaskSnapshot> RuntimeShared::tasks() {
  std::vector<TaskSnapshot> all;
  owned_.for_each([&](const TaskHeader& t) {
    const std::uint64_t s = t.state.load(std::memory_order_relaxed);
    TaskSnapshot& snap = all.emplace_back();
    snap.id = t.id;
    if (t.name != nullptr) snap.name = t.name;
    snap.channel = levels_.name(t.channel);
    snap.location = SpawnLocation{t.spawn_file, t.spawn_line()};
    snap.state = state_of(s);
    snap.cancel_requested = (s & kCancelled) != 0;
    snap.polls = t.polls.load(std::memory_order_relaxed);
    snap.wakes = snap.polls > 0 ? snap.polls - 1 : 0;
    snap.self_wakes = t.self_wakes.load(std::memory_order_relaxed);
  });
  return all;
}

void RuntimeShared::describe(const TaskHeader& t, std::ostream& out) const {
  std::uint64_t s = t.state.load(std::memory_order_relaxed);
  out << "task " << t.id;
  if (t.name != nullptr) out << " \"" << t.name << '"';
  out << " [" << levels_.name(t.channel) << "]: " << state_name(state_of(s));
  if (s & kCancelled) out << ", cancel requested";
  if (const std::type_info* w = t.waiting_on.load(std::memory_order_relaxed)) {
    int status = 0;
    char* name = abi::__cxa_demangle(w->name(), nullptr, nullptr, &status);
    out << ", waiting on " << (status == 0 && name ? name : w->name());
    std::free(name);
  }
  out << ", " << t.polls.load(std::memory_order_relaxed) << " poll(s)";
  if (t.spawn_line() != 0) out << ", spawned at " << t.spawn_file << ':' << t.spawn_line();
  out << '\n';
}

}  // namespace spool::detail
