// The transitions of the task state word (bits documented in header.hpp).
//
// Each transition is written once, on the bare word (Atomic<std::uint64_t>&), so that the
// model tests (tests/model/) drive the real code without a TaskHeader; the TaskHeader&
// overloads the runtime calls forward to it.
#pragma once

#include <cassert>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "spool/detail/atomic.hpp"
#include "task/header.hpp"

namespace spool::detail {

// The state word's type (TaskHeader::state).
using StateWord = Atomic<std::uint64_t>;

enum class RunClaim { kPoll, kCancel, kNone, kDealloc };
enum class IdleResult { kIdle, kNotified, kCancel, kDealloc };
// kDealloc: only from a wake that consumed the last reference (by value, of a complete task).
enum class WakeResult { kNothing, kSubmit, kDealloc };

// What a transition decides from the word it read: its result, and the word to write in
// its place (none: the result stands without a write).
template <class Result>
struct Step {
  Result result;
  std::optional<std::uint64_t> next;
};

// The loop of every transition that decides from the current word: `decide(cur)` returns a
// Step, whose word is written by a CAS that is retried, deciding again, until it succeeds.
// AcqRel on success, acquire on every read (header.hpp says why).
template <class Decide>
auto update_state(StateWord& state, Decide decide) noexcept {
  std::uint64_t cur = state.load(std::memory_order_acquire);
  for (;;) {
    const auto step = decide(cur);
    if (!step.next) return step.result;
    if (state.compare_exchange_weak(cur, *step.next, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      return step.result;
    }
  }
}

// Claims a notified task to poll it, consuming the queue entry's reference if it cannot.
inline RunClaim transition_to_running(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<RunClaim> {
    assert(cur & kNotified || cur & (kRunning | kComplete));
    if (cur & (kRunning | kComplete)) {
      const std::uint64_t next = cur - kRefOne;  // a stale entry (shut down): drop its reference
      return {ref_count(next) == 0 ? RunClaim::kDealloc : RunClaim::kNone, next};
    }
    return {(cur & kCancelled) ? RunClaim::kCancel : RunClaim::kPoll,
            (cur | kRunning) & ~kNotified};
  });
}

// After a pending poll. A wake that came during the poll (NOTIFIED) keeps the run
// reference for the reschedule; otherwise the run reference is dropped.
inline IdleResult transition_to_idle(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<IdleResult> {
    assert(cur & kRunning);
    if (cur & kCancelled) return {IdleResult::kCancel, std::nullopt};  // the caller cancels
    const std::uint64_t next = cur & ~kRunning;
    if (next & kNotified) return {IdleResult::kNotified, next};
    return {ref_count(next - kRefOne) == 0 ? IdleResult::kDealloc : IdleResult::kIdle,
            next - kRefOne};
  });
}

// After a pending poll in which the task deferred its own wake-up (yield_now on a runtime
// thread): it becomes idle and NOTIFIED at once, keeping the run reference for its entry
// in the deferred list. kCancel: stays claimed, the caller cancels.
inline bool transition_to_idle_deferred(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<bool> {
    assert(cur & kRunning);
    if (cur & kCancelled) return {false, std::nullopt};
    return {true, (cur & ~kRunning) | kNotified};
  });
}

// Marks a claimed task complete; returns the state before.
inline std::uint64_t transition_to_complete(StateWord& state) noexcept {
  std::uint64_t prev = state.fetch_xor(kRunning | kComplete, std::memory_order_acq_rel);
  assert((prev & kRunning) && !(prev & kComplete));
  return prev;
}

// Marks a claimed task complete and drops `n` references, in one RMW; true when they were
// the last (the caller deallocates). Only for a task whose JoinHandle is gone (JOIN_INTEREST
// is never set again) and whose frame the caller destroyed first: nobody is left to wake,
// and the header may be freed by another holder as soon as this returns. AcqRel: as
// transition_to_complete and ref_dec together.
inline bool transition_to_complete_and_release(StateWord& state, std::uint64_t n) noexcept {
  // RUNNING is set and COMPLETE is clear, so adding COMPLETE - RUNNING flips both.
  std::uint64_t prev =
      state.fetch_sub(n * kRefOne + kRunning - kComplete, std::memory_order_acq_rel);
  assert((prev & kRunning) && !(prev & (kComplete | kJoinInterest)) && ref_count(prev) >= n);
  return ref_count(prev) == n;
}

// Marks a claimed task complete and drops `n` references, in one CAS from `expected` (read
// by the caller): for a task whose JoinHandle is alive and registered no waker (JOIN_INTEREST
// set, JOIN_WAKER clear), so there is nobody to wake and the JoinHandle's reference keeps
// the header. False, with `expected` reloaded, if the word changed: the caller decides
// again. AcqRel: as transition_to_complete (the JoinHandle's fetch_or or its load of
// COMPLETE acquires the output) and ref_dec.
inline bool transition_to_complete_for_join(StateWord& state, std::uint64_t& expected,
                                            std::uint64_t n) noexcept {
  assert((expected & (kRunning | kJoinInterest)) == (kRunning | kJoinInterest));
  assert(!(expected & (kComplete | kJoinWaker)) && ref_count(expected) > n);
  return state.compare_exchange_weak(expected, expected - n * kRefOne - kRunning + kComplete,
                                     std::memory_order_acq_rel, std::memory_order_acquire);
}

// An inspection claim (another thread reading the task's chain: Runtime::dump, tasks(),
// JoinHandle::backtrace): claims an idle task so that no poll runs while its chain is read.
// The caller's own reference, taken before, becomes the claim's, as a queue entry's does.
// Only an idle task that nobody asked to stop: a queued one (NOTIFIED) has an entry whose
// claim must find it as it left it, and a CANCELLED one is the shutdown's or its canceller's
// to claim (inspection_count.hpp); a claimed or complete one is refused too (false: the
// caller keeps its reference). AcqRel: acquire sees the chain as the last poll left it.
inline bool transition_to_inspecting(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<bool> {
    if (cur & (kRunning | kNotified | kComplete | kCancelled)) return {false, std::nullopt};
    return {true, cur | kRunning};
  });
}

// Gives an inspection claim back. A wake (NOTIFIED) or an abort (CANCELLED) that came
// meanwhile found the task "running" and left it to the claimer: the claim's reference
// becomes a queue entry's (true: the caller schedules it), so that a runtime thread polls or
// cancels it, never the reader. Otherwise the task is idle again and the reference dropped
// (never the last: an uncancelled task is in the owned list). Release: the reads happen
// before the next claim.
inline bool transition_from_inspecting(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<bool> {
    assert(cur & kRunning);
    const std::uint64_t next = cur & ~kRunning;
    if (next & (kNotified | kCancelled)) return {true, next | kNotified};
    assert(ref_count(next) >= 2);
    return {false, next - kRefOne};
  });
}

// A wake through a Waker reference. Submit: the caller must schedule the task with the
// reference this added.
//
// "Already NOTIFIED, nothing to do" is decided by an RMW (a CAS of the word onto itself),
// not by the load: the waker stored its event and then reads the word, while the poller
// clears NOTIFIED with its claiming CAS and then reads the event. With a plain load here
// that is the store-buffering pattern: the load may return the NOTIFIED the poller has just
// cleared while the poll misses the event, and the wake-up is lost (the task model in
// tests/model/ finds that execution). An RMW reads the latest value: either it sees the
// claim (and sets NOTIFIED again, for one more poll) or the claim comes after it and
// acquires the waker's event with it. COMPLETE is final, so a load that sees it is enough.
inline WakeResult transition_to_notified_by_ref(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<WakeResult> {
    if (cur & kComplete) return {WakeResult::kNothing, std::nullopt};
    // NOTIFIED: confirmed by writing the word onto itself (see above); release publishes the
    // waker's event to the poller whose claim reads this value.
    if (cur & kNotified) return {WakeResult::kNothing, cur};
    if (cur & kRunning) return {WakeResult::kNothing, cur | kNotified};  // the poller requeues
    return {WakeResult::kSubmit, (cur | kNotified) + kRefOne};
  });
}

// A wake that consumes a Waker's reference (Waker::wake): as transition_to_notified_by_ref,
// and in the same RMW the reference is handed over or dropped. Submit: it becomes the queue
// entry's, which the caller schedules (spool's schedule never reads a task once queued, so
// the caller needs no reference of its own across it). Dealloc: it was the last (the task is
// complete). A task not complete keeps the owned list's reference or a claimer's besides
// this one, so that drop is never the last.
inline WakeResult transition_to_notified_by_val(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<WakeResult> {
    if (cur & kComplete) {
      return {ref_count(cur) == 1 ? WakeResult::kDealloc : WakeResult::kNothing, cur - kRefOne};
    }
    assert(ref_count(cur) >= 2);
    if (cur & kNotified) return {WakeResult::kNothing, cur - kRefOne};
    if (cur & kRunning) return {WakeResult::kNothing, (cur | kNotified) - kRefOne};
    return {WakeResult::kSubmit, cur | kNotified};
  });
}

// abort(): sets CANCELLED and, if the task is idle, schedules it so that it is cancelled.
inline WakeResult transition_to_notified_and_cancel(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<WakeResult> {
    if (cur & (kComplete | kCancelled)) return {WakeResult::kNothing, std::nullopt};
    if (cur & (kRunning | kNotified)) return {WakeResult::kNothing, cur | kCancelled};
    return {WakeResult::kSubmit, (cur | kCancelled | kNotified) + kRefOne};
  });
}

// Runtime shutdown: sets CANCELLED and claims the task if it is idle (true: the caller
// cancels it). A running task is cancelled by its poller when the poll ends.
inline bool transition_to_shutdown(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<bool> {
    if (cur & (kRunning | kComplete)) return {false, cur | kCancelled};
    return {true, cur | kCancelled | kRunning};
  });
}

// The start of a shutdown: sets CANCELLED and nothing else (no claim, no queue entry). A
// task being polled stops at its next cooperative point (context/budget.hpp reads the bit)
// and is cancelled when that poll ends; the rest are cancelled by transition_to_shutdown.
inline void transition_to_cancel_requested(StateWord& state) noexcept {
  state.fetch_or(kCancelled, std::memory_order_acq_rel);
}

// Adds a reference (a queue entry, an inspection's). Relaxed: made from an existing reference.
inline void ref_inc(StateWord& state) noexcept {
  state.fetch_add(kRefOne, std::memory_order_relaxed);
}

// Adds a new Waker's or AbortHandle's reference, and counts the Waker made in the same RMW.
// Relaxed, as ref_inc. At kMaxWakerRefs references the program ends: one more would carry
// into the Wakers-made bits and corrupt the count (a Waker cloned and kept in every poll?).
inline void ref_inc_waker(StateWord& state) noexcept {
  const std::uint64_t prev = state.fetch_add(kRefOne + kMadeOne, std::memory_order_relaxed);
  if (ref_count(prev) >= kMaxWakerRefs) [[unlikely]] {
    std::fputs("spool: a task has about 2^32 live Wakers and AbortHandles: they are leaked\n",
               stderr);
    std::abort();
  }
}

// Drops `n` references; true when they were the last (the caller deallocates). AcqRel:
// the last dropper must see every other holder's writes.
inline bool ref_dec(StateWord& state, std::uint64_t n = 1) noexcept {
  std::uint64_t prev = state.fetch_sub(n * kRefOne, std::memory_order_acq_rel);
  assert(ref_count(prev) >= n);
  return ref_count(prev) == n;
}

// The JoinHandle is dropped. Before completion one CAS clears JOIN_INTEREST and drops the
// JoinHandle's reference (complete() then destroys the frame: its RMW reads the cleared bit,
// and its acquire sees the JoinHandle's reads). Once COMPLETE is set (final, published by
// complete()'s acq_rel RMW, seen here with acquire) nothing changes and this returns true:
// complete() saw JOIN_INTEREST and left the frame, so the caller destroys it, then drops
// the reference with ref_dec (not before: the reference keeps the memory).
inline bool transition_to_join_dropped(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<bool> {
    assert(cur & kJoinInterest);
    if (cur & kComplete) return {true, std::nullopt};
    // Not the last reference: an unfinished task is held by its list or its claimer too.
    assert(ref_count(cur) >= 2);
    return {false, cur - kJoinInterest - kRefOne};
  });
}

// The JoinHandle's waker slot (TaskHeader::join_waker, a plain Waker) is guarded by
// JOIN_WAKER, as tokio's is. The JoinHandle, its only writer, writes it only while the bit is
// clear and the task unfinished, then sets the bit; complete() reads it (wake_by_ref) only if
// its COMPLETE RMW saw the bit set; after COMPLETE nobody writes it (it goes with the header,
// after the last reference).

// Sets JOIN_WAKER once the JoinHandle wrote the slot; true if the task completed first (no
// one reads the slot then). The bit and COMPLETE meet in RMWs on this one word, so exactly
// one side sees the other: this fetch_or returns COMPLETE, or complete()'s RMW returns
// JOIN_WAKER (a plain load on either side would be the store-buffering pattern). AcqRel:
// release publishes the slot to complete()'s acquire; acquire sees the output if complete.
inline bool transition_to_join_waker_set(StateWord& state) noexcept {
  return (state.fetch_or(kJoinWaker, std::memory_order_acq_rel) & kComplete) != 0;
}

// Takes the slot back, to write another waker: clears JOIN_WAKER unless the task completed
// (false: complete() may be reading the slot, and the output is final). A CAS that fails on
// COMPLETE: once it succeeds, complete()'s RMW (later in the word's order) sees the bit clear
// and leaves the slot alone. Acquire: sees the output when it fails on COMPLETE.
inline bool transition_to_join_waker_unset(StateWord& state) noexcept {
  return update_state(state, [](std::uint64_t cur) -> Step<bool> {
    assert(cur & kJoinWaker);  // only the JoinHandle clears it
    if (cur & kComplete) return {false, std::nullopt};
    return {true, cur & ~kJoinWaker};
  });
}

// The JoinHandle's poll: true if the task is complete (the output may be taken); false once
// complete() will wake `waker`. `slot` is the task's join_waker. A second poll with the same
// waker costs no RMW; another waker is swapped in with the bit cleared (tokio's protocol).
// If cloning `waker` throws, the bit stays clear (nothing will be woken) and the poll throws.
inline bool join_register_waker(StateWord& state, Waker& slot, const Waker& waker) {
  // Acquire: sees the output if COMPLETE is set (complete()'s acq_rel RMW published it).
  const std::uint64_t cur = state.load(std::memory_order_acquire);
  if (cur & kComplete) return true;
  if (cur & kJoinWaker) {
    if (slot.will_wake(waker)) return false;  // a read, as complete()'s is
    if (!transition_to_join_waker_unset(state)) return true;
  }
  slot = waker;
  return transition_to_join_waker_set(state);
}

// complete()'s protocol (src/task/harness.cpp), written once for the runtime and the models:
// publishes a claimed task's completion and drops the claimer's `own` references. `task`
// supplies destroy_frame() (the frame of a task whose output nobody will take), wake_join()
// (the JoinHandle's registered waker), before_release(word) (called with the word as last
// read, before the RMW that may drop the claimer's references: the runtime pins its
// scheduler there; not called when the claimer frees the task without one) and dealloc()
// (after the last reference).
template <class Task>
void complete_claimed(StateWord& state, std::uint64_t own, Task& task) {
  // Acquire: sees what the JoinHandle did before it cleared JOIN_INTEREST.
  std::uint64_t cur = state.load(std::memory_order_acquire);
  while ((cur & kJoinInterest) && !(cur & kJoinWaker)) {
    // A JoinHandle with no waker to wake yet: one CAS completes and lets go, the JoinHandle's
    // reference keeping the header. A change meanwhile (its drop, its first pending poll, a
    // wake, an abort) makes this thread decide again.
    task.before_release(cur);
    if (transition_to_complete_for_join(state, cur, own)) return;
  }
  if (!(cur & kJoinInterest)) {
    // The JoinHandle is gone for good, so no one takes the output: the frame goes first, and
    // completing and letting go are then one RMW, or none: when this thread's references are
    // all that are left, no other thread can reach the word (one needs a reference, or the
    // owned-task list the caller left), so the memory goes without writing it. Acquire: pairs
    // with the release of every other reference's drop, which precede it in the word's
    // modification order.
    task.destroy_frame();
    const std::uint64_t now = state.load(std::memory_order_acquire);
    if (ref_count(now) == own) {
      task.dealloc();
      return;
    }
    task.before_release(now);
    if (transition_to_complete_and_release(state, own)) task.dealloc();
    return;
  }
  const std::uint64_t prev = transition_to_complete(state);
  if (prev & kJoinInterest) {
    // The RMW saw JOIN_WAKER (acquire): the slot is written and stays so.
    if (prev & kJoinWaker) task.wake_join();
  } else {
    task.destroy_frame();
  }
  task.before_release(prev);
  if (ref_dec(state, own)) task.dealloc();
}

// join_drop's protocol (src/task/harness.cpp), for the runtime and the models: the
// JoinHandle lets go; if the task completed first, its frame goes here (complete() left it
// for the output), then the JoinHandle's reference.
template <class Task>
void drop_join_interest(StateWord& state, Task& task) {
  if (transition_to_join_dropped(state)) {
    task.destroy_frame();
    if (ref_dec(state)) task.dealloc();
  }
}

// The same transitions on a task's header (what the runtime calls).
inline RunClaim transition_to_running(TaskHeader& t) noexcept {
  return transition_to_running(t.state);
}
inline IdleResult transition_to_idle(TaskHeader& t) noexcept { return transition_to_idle(t.state); }
inline bool transition_to_idle_deferred(TaskHeader& t) noexcept {
  return transition_to_idle_deferred(t.state);
}
inline std::uint64_t transition_to_complete(TaskHeader& t) noexcept {
  return transition_to_complete(t.state);
}
inline bool transition_to_complete_and_release(TaskHeader& t, std::uint64_t n) noexcept {
  return transition_to_complete_and_release(t.state, n);
}
inline bool transition_to_complete_for_join(TaskHeader& t, std::uint64_t& expected,
                                            std::uint64_t n) noexcept {
  return transition_to_complete_for_join(t.state, expected, n);
}
inline WakeResult transition_to_notified_by_ref(TaskHeader& t) noexcept {
  return transition_to_notified_by_ref(t.state);
}
inline WakeResult transition_to_notified_by_val(TaskHeader& t) noexcept {
  return transition_to_notified_by_val(t.state);
}
inline WakeResult transition_to_notified_and_cancel(TaskHeader& t) noexcept {
  return transition_to_notified_and_cancel(t.state);
}
inline bool transition_to_inspecting(TaskHeader& t) noexcept {
  return transition_to_inspecting(t.state);
}
inline bool transition_from_inspecting(TaskHeader& t) noexcept {
  return transition_from_inspecting(t.state);
}
inline bool transition_to_shutdown(TaskHeader& t) noexcept {
  return transition_to_shutdown(t.state);
}
inline void transition_to_cancel_requested(TaskHeader& t) noexcept {
  transition_to_cancel_requested(t.state);
}
inline bool join_register_waker(TaskHeader& t, const Waker& waker) {
  return join_register_waker(t.state, t.join_waker, waker);
}
inline bool transition_to_join_dropped(TaskHeader& t) noexcept {
  return transition_to_join_dropped(t.state);
}
inline void ref_inc(TaskHeader& t) noexcept { ref_inc(t.state); }
inline void ref_inc_waker(TaskHeader& t) noexcept { ref_inc_waker(t.state); }
inline bool ref_dec(TaskHeader& t, std::uint64_t n = 1) noexcept { return ref_dec(t.state, n); }

}  // namespace spool::detail
