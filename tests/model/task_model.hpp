// The task harness that the task models drive: src/task/harness.cpp's steps (run_task,
// complete, cancel, dealloc and the give-back after a claim) on a bare state word, with Relacy
// vars that catch a poll, a frame's destruction or the free out of order.
#pragma once

#include <cstdint>

#include "model/run_model.hpp"
#include "task/state.hpp"

namespace spool::model {

namespace sd = spool::detail;

struct TaskModel {
  explicit TaskModel(std::uint64_t initial_state) : state{initial_state} {}

  sd::StateWord state;
  sd::Atomic<bool> event{false};  // what the task waits for: set before the wake
  rl::var<int> polls;
  rl::var<int> chain;  // what a poll leaves in the chain (an inspection reads it)
  rl::var<bool> completed;
  rl::var<int> frame_destroyed;  // 1 once destroyed
  rl::var<int> output;           // written by the completing poll, destroyed with the frame
  rl::var<bool> freed;           // the memory, freed by the last reference
  sd::Atomic<int> deallocs{0};   // times the count reached zero
  sd::Atomic<bool> list_holds{true};
  // Set by cancel(), read by the suite's after() (relaxed: after() runs after every thread).
  sd::Atomic<bool> cancelled{false};

  // The suite's before(): the vars' first values.
  void reset() {
    polls($) = 0;
    chain($) = 0;
    completed($) = false;
    frame_destroyed($) = 0;
    output($) = 0;
    freed($) = false;
  }

  void dealloc() {
    RL_ASSERT(frame_destroyed($) == 1);
    freed($) = true;
    deallocs.fetch_add(1, std::memory_order_relaxed);
  }
  void drop_refs(std::uint64_t n) {
    RL_ASSERT(!freed($));  // a reference holder may read the header until it lets go
    if (sd::ref_dec(state, n)) dealloc();
  }
  // harness.cpp destroy_finished_frame: by the one thread that saw both COMPLETE and the
  // JoinHandle gone (complete_claimed's and drop_join_interest's hook).
  void destroy_frame() {
    RL_ASSERT(!freed($));
    if (frame_destroyed($) == 0) {
      output($) = -1;
      frame_destroyed($) = 1;
    }
  }
  // The list's reference, if the task is still in the list (taken once: by the completer
  // leaving it, or by a thread acting as shutdown's pop, which drops it).
  std::uint64_t list_refs() {
    return list_holds.exchange(false, std::memory_order_relaxed) ? 1 : 0;
  }

  // complete_claimed's other hooks: the models' JoinHandle does not poll (no waker to wake)
  // and it pins nothing.
  void wake_join() { RL_ASSERT(false); }
  void before_release(std::uint64_t) {}

  // harness.cpp complete(): leaves the list, then state.hpp's complete_claimed.
  void complete() {
    const std::uint64_t own = 1 + list_refs();  // the list comes first
    completed($) = true;
    sd::complete_claimed(state, own, *this);
  }
  // harness.cpp cancel(): the claimer destroys the frame, then completes.
  void cancel() {
    RL_ASSERT(frame_destroyed($) == 0);
    output($) = -1;
    frame_destroyed($) = 1;
    cancelled.store(true, std::memory_order_relaxed);
    complete();
  }

  // The end of a claim that did not complete the task (a pending poll, an inspection):
  // harness.cpp's switch on transition_to_idle. True: rescheduled with the claim's
  // reference (the caller runs that entry, as a worker would).
  bool give_back() {
    switch (sd::transition_to_idle(state)) {
      case sd::IdleResult::kIdle:
        return false;
      case sd::IdleResult::kNotified:
        return true;
      case sd::IdleResult::kCancel:
        cancel();
        return false;
      case sd::IdleResult::kDealloc:
        dealloc();
        return false;
    }
    return false;
  }

  // harness.cpp run_task, for one queue entry (and the reschedules it causes).
  void run_entry() {
    for (;;) {
      switch (sd::transition_to_running(state)) {
        case sd::RunClaim::kPoll:
          break;
        case sd::RunClaim::kCancel:
          cancel();
          return;
        case sd::RunClaim::kNone:
          return;
        case sd::RunClaim::kDealloc:
          dealloc();
          return;
      }
      RL_ASSERT(!completed($));
      polls($) = polls($) + 1;
      chain($) = polls($);
      if (event.load(std::memory_order_relaxed)) {  // ready: the poll completes the task
        output($) = 1;
        complete();
        return;
      }
      if (!give_back()) return;
    }
  }
};

}  // namespace spool::model
