// What a runtime says about its live tasks: Runtime::tasks()' snapshots and Runtime::dump()'s
// text, both read from the owned-task list, with the backtraces of the idle ones.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/shared.hpp"
#include "task/harness.hpp"
#include "task/state.hpp"
#include "task/type_name.hpp"

namespace spool::detail {

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

// A duration as dump() prints it, as spool-console does.
std::string readable(std::chrono::nanoseconds d) {
  const double ns = static_cast<double>(d.count());
  char text[32];
  if (ns < 1e3) {
    std::snprintf(text, sizeof text, "%.0f ns", ns);
  } else if (ns < 1e6) {
    std::snprintf(text, sizeof text, "%.1f us", ns / 1e3);
  } else if (ns < 1e9) {
    std::snprintf(text, sizeof text, "%.1f ms", ns / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.2f s", ns / 1e9);
  }
  return text;
}

// One task as dump() prints it: a line, then its backtrace's lines, indented.
void write(const TaskSnapshot& t, std::ostream& out) {
  out << "task " << t.id;
  if (!t.name.empty()) out << " \"" << t.name << '"';
  out << " [" << t.channel << "]: " << state_name(t.state);
  if (t.cancel_requested) out << ", cancel requested";
  if (!t.waiting_on.empty()) out << ", waiting on " << t.waiting_on;
  if (t.wakers) {
    if (*t.wakers == 0) {
      out << ", no waker (nothing can wake it)";
    } else {
      out << ", " << *t.wakers << " waker(s)";
    }
  }
  out << ", " << t.polls << " poll(s)";
  if (t.times) {
    out << " (busy " << readable(t.times->busy) << ", scheduled " << readable(t.times->scheduled)
        << ", idle " << readable(t.times->idle) << ")";
  }
  if (t.location.line != 0) out << ", spawned at " << t.location.file << ':' << t.location.line;
  out << '\n';
  if (t.backtrace) out << t.backtrace->to_string();
}

}  // namespace

TaskSnapshot RuntimeShared::snapshot_of(const TaskHeader& t) const {
  // Acquire: pairs with the poller's transition out of RUNNING, so that the counters read
  // below are at least that poll's.
  const std::uint64_t s = t.state.load(std::memory_order_acquire);
  TaskSnapshot snap;
  snap.id = t.id;
  if (t.name != nullptr) snap.name = t.name;
  snap.channel = levels_.name(t.channel);
  snap.location = SpawnLocation{t.spawn_file, t.spawn_line()};
  snap.state = state_of(s);
  snap.cancel_requested = (s & kCancelled) != 0;
  snap.polls = t.polls.load(std::memory_order_relaxed);
  snap.wakes = snap.polls > 0 ? snap.polls - 1 : 0;
  snap.self_wakes = t.self_wakes.load(std::memory_order_relaxed);
  snap.waker_clones = wakers_made(s);
  if (const std::type_info* w = t.waiting_on.load(std::memory_order_relaxed)) {
    snap.waiting_on = type_name(*w);
  }
  if (t.side != nullptr && t.side->times) {
    snap.times = t.side->times->read(TaskClock::now(), snap.state == TaskSnapshot::State::kRunning,
                                     snap.state == TaskSnapshot::State::kIdle);
  }
  return snap;
}

std::vector<TaskSnapshot> RuntimeShared::tasks() {
  // A reference to each live task, taken under the list's locks; the snapshots and the
  // inspections come after, outside them, since an inspection may cancel a task (which
  // leaves the list). Each inspection consumes its task's reference (null: consumed).
  std::vector<TaskHeader*> held;
  std::vector<TaskSnapshot> all;
  try {
    held.reserve(owned_.size() + 16);  // (growth under the shard locks stalls their spawns)
    owned_.for_each([&](TaskHeader& t) {
      held.push_back(&t);  // first: a push that throws leaves no reference behind
      ref_inc(t);
    });
    // In id order (each thread's spawn order), not the list's shard by shard.
    std::sort(held.begin(), held.end(),
              [](const TaskHeader* a, const TaskHeader* b) { return a->id < b->id; });
    all.reserve(held.size());
    for (TaskHeader*& t : held) {
      TaskSnapshot& snap = all.emplace_back(snapshot_of(*t));
      if (std::optional<Inspection> seen = inspect_task(std::exchange(t, nullptr))) {
        snap.backtrace = std::move(seen->backtrace);
        if (seen->wakers) {
          // From the one word the inspection read: every live Waker was counted as made.
          // Modulo 2^26, as the count; a "negative" difference (the live count may hold
          // another reader's reference too) reads 0.
          snap.wakers = static_cast<std::uint32_t>(*seen->wakers);
          snap.waker_clones = seen->wakers_made;
          const std::uint32_t gone = (seen->wakers_made - *snap.wakers) & kWakersMadeMask;
          snap.waker_drops = gone < kWakersMadeMask / 2 ? gone : 0;
        }
      }
    }
  } catch (...) {
    for (TaskHeader* t : held) {
      if (t != nullptr) drop_task_refs(t);
    }
    throw;
  }
  return all;
}

std::string RuntimeShared::dump() {
  const std::vector<TaskSnapshot> all = tasks();
  std::ostringstream out;
  out << all.size() << " live task(s)\n";
  for (const TaskSnapshot& t : all) write(t, out);
  return out.str();
}

void RuntimeShared::describe(const TaskHeader& t, std::ostream& out) const {
  write(snapshot_of(t), out);
}

}  // namespace spool::detail
