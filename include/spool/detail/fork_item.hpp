// What a worker's fork deque (spool/detail/fork_deque.hpp) and spool::join
// (spool/detail/fork_join.hpp) share: the item offered for stealing, and where a join is
// polled. Below the scheduler: it names the runtime only by a forward declaration.
#pragma once

#include <cstdint>

#include "spool/config.hpp"

namespace spool::detail {

class ForkDeque;
class RuntimeShared;
class TaskHeader;

struct ForkItem;

// What can be done with an item, whatever its type: one static table per type, so that an
// item carries one pointer (spool::join's children extend it, spool/detail/fork_join.hpp).
struct ForkItemOps {
  // Called once, by the thread that took the item from a deque other than by its join's own
  // pop (a thief, or a worker handing its core over in block_in_place), or by the join
  // itself where it spawns its children (ForkSite::spawn_others): runs the child as a
  // runtime task of its own.
  void (*run_remote)(ForkItem* self) noexcept;
};

// A child offered for stealing in a worker's fork deque.
struct ForkItem {
  const ForkItemOps* ops;

  // ForkItemOps::run_remote.
  void run_remote() noexcept { ops->run_remote(this); }
};

// Where a join is polled. No default values: fork_site writes every field, and a join
// that offers no child never asks (its site stays unwritten).
struct ForkSite {
  ForkDeque* deque;        // this worker's fork deque; null: none here
  std::uint64_t spills;    // deque->spills() then (see fork_pop); 0 without a deque
  RuntimeShared* runtime;  // where stolen children run as tasks (with deque or spawn)
  // The task being polled, whose channel (and deadline, on an EDF channel) a stolen child
  // inherits, as a spawn from it would; null: none, or a runtime without levels. (Its
  // channel and deadline never change once spawned, and it outlives its join.)
  const TaskHeader* parent;
  bool spawn_others;  // no deque, but a multi-thread runtime: spawn children
};

}  // namespace spool::detail
