#include "task/harness.hpp"

#include <atomic>
#include <cassert>
#include <exception>
#include <new>
#include <optional>
#include <utility>

#include "context/budget.hpp"
#include "context/deferred.hpp"
#include "spool/detail/join.hpp"  // the JoinHandle operations defined here, exported (SPOOL_API)
#include "task/frame_pool.hpp"
#include "task/observer.hpp"
#include "task/owned_tasks.hpp"
#include "task/scheduler_api.hpp"
#include "task/state.hpp"
#include "task/type_name.hpp"

namespace spool::detail {

static_assert(kCoopCancelledBit == kCancelled && kCoopNotifiedBit == kNotified,
              "the cooperative points read the task's CANCELLED and NOTIFIED bits");

namespace {

// Task ids: unique, for dump() and debugging, and what places a task in the owned-task list
// (OwnedTasks::shard_of). Each thread takes blocks of ids from the global counter (relaxed:
// only uniqueness matters), so spawning threads do not share a cache line per spawn.
std::atomic<std::uint64_t> next_id_block{1};
constexpr std::uint64_t kIdBlock = 1024;
thread_local std::uint64_t next_id = 0;
thread_local std::uint64_t id_limit = 0;

std::uint64_t new_task_id() noexcept {
  if (next_id == id_limit) {
    next_id = next_id_block.fetch_add(kIdBlock, std::memory_order_relaxed);
    id_limit = next_id + kIdBlock;
  }
  return next_id++;
}

void free_memory(TaskHeader* t) noexcept {
  void* base = static_cast<FramePrefix*>(t);  // the allocation starts with the prefix
  std::uint16_t size_class = t->size_class;
  t->~TaskHeader();  // may free the scheduler (see scheduler_pin): nothing touches it after
  deallocate_frame(base, size_class);
}

// The last reference is gone. The frame always went first: a task leaves the owned-task
// list (whose reference it holds until then) only by completing or being cancelled, and
// both destroy the frame unless a JoinHandle still wants the output, which it holds a
// reference for (see destroy_finished_frame).
void dealloc(TaskHeader* t) noexcept {
  assert(t->frame_destroyed);
  free_memory(t);
}

void wake_by_ref(TaskHeader* t) noexcept {
  if (transition_to_notified_by_ref(*t) == WakeResult::kSubmit) submit_woken(t, false);
}

// Waker vtable: the data pointer is the TaskHeader; each Waker owns one reference.
RawWaker waker_clone(const void* p);
void waker_drop(const void* p) { drop_task_refs(static_cast<TaskHeader*>(const_cast<void*>(p))); }
void waker_wake_by_ref(const void* p) {
  wake_by_ref(static_cast<TaskHeader*>(const_cast<void*>(p)));
}
void waker_wake(const void* p) {
  auto* t = static_cast<TaskHeader*>(const_cast<void*>(p));
  if (t->scheduler != this_thread_scheduler) {
    // Off the task's worker threads the Waker's reference keeps the scheduler alive across
    // schedule() (Scheduler::schedule), so it is dropped only after.
    waker_wake_by_ref(p);
    waker_drop(p);
    return;
  }
  switch (transition_to_notified_by_val(*t)) {
    case WakeResult::kSubmit:
      submit_woken(t, false);  // with the Waker's reference
      return;
    case WakeResult::kDealloc:
      dealloc(t);
      return;
    case WakeResult::kNothing:
      return;
  }
}
constexpr WakerVTable task_waker_vtable{&waker_clone, &waker_wake, &waker_wake_by_ref, &waker_drop};
RawWaker waker_clone(const void* p) {
  auto* t = static_cast<TaskHeader*>(const_cast<void*>(p));
  ref_inc_waker(*t);
  return RawWaker{t, &task_waker_vtable};
}

// Destroys the frame of a completed task whose output no one will take (it has no
// JoinHandle, or its JoinHandle is done): the coroutine's parameters and its output go now,
// not when the last reference goes, since they may hold a reference themselves (a Waker of
// this very task, kept in a structure the task owns: a cycle that would never be freed).
// The header (and the memory) stays until the last reference is dropped. Called by the one
// thread that saw both COMPLETE and the JoinHandle gone (one RMW on the state word each).
void destroy_finished_frame(TaskHeader* t) noexcept {
  if (!t->frame_destroyed) t->frame().destroy();  // operator delete marks frame_destroyed
}

// Before a completing claimer drops its `own` references (the claim's and the list's):
// pins the scheduler if `state` shows references besides those and the JoinHandle's, one of
// which may be a thread about to call schedule() (TaskHeader::scheduler_pin). Those other
// references cannot grow meanwhile: no wake submits a claimed or complete task.
void pin_if_referenced(TaskHeader* t, std::uint64_t state, std::uint64_t own) noexcept {
  const std::uint64_t join = (state & kJoinInterest) ? 1 : 0;
  if (ref_count(state) > own + join && !t->scheduler_pin) t->scheduler_pin = t->scheduler->pin();
}

// What the protocols of state.hpp (complete_claimed, drop_join_interest) do to a TaskHeader.
struct HeaderActions {
  TaskHeader* t;
  std::uint64_t own;
  void destroy_frame() noexcept { destroy_finished_frame(t); }
  void wake_join() noexcept { t->join_waker.wake_by_ref(); }
  void before_release(std::uint64_t state) noexcept { pin_if_referenced(t, state, own); }
  void dealloc() noexcept { spool::detail::dealloc(t); }
};

// Completes a claimed task: leaves the owned-task list, publishes the outcome, wakes the
// JoinHandle (or, with none, destroys the frame), and drops the claim's reference (plus
// the list's, if it held one). Tells the observer first, so its hook runs before the
// JoinHandle can see the outcome.
void complete(TaskHeader* t) noexcept {
  if (const TaskObserver* o = t->scheduler->observer()) [[unlikely]] {
    o->terminated(*t);
  }
  HeaderActions c{t, 1 + (t->scheduler->owned().remove(t) ? 1u : 0u)};
  complete_claimed(t->state, c.own, c);
}

// Cancels a claimed task: its frame is destroyed now (the destructors of its locals run),
// its header lives until the last reference goes. complete() then tells the terminate hook,
// after those destructors, as for a task that finished.
void cancel(TaskHeader* t) noexcept {
  t->output_cancelled = true;
  t->frame().destroy();  // operator delete marks frame_destroyed; the memory stays
  complete(t);
}

// A Waker for the task that borrows the run reference: built in place and never
// destroyed, so polling costs no reference-count traffic.
class BorrowedWaker {
 public:
  explicit BorrowedWaker(TaskHeader* t) {
    ::new (storage_) Waker(Waker::from_raw({t, &task_waker_vtable}));
  }
  const Waker& get() const { return *std::launder(reinterpret_cast<const Waker*>(storage_)); }

 private:
  alignas(Waker) unsigned char storage_[sizeof(Waker)];
};

// Puts a task that yielded itself on the thread's deferred list; false if the list could
// not grow (the caller requeues the task at once instead).
bool push_deferred(TaskHeader* t) noexcept {
  try {
    current_deferred()->push_task(t);
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

TaskHeader::TaskHeader(TaskPromiseBase& p, Scheduler* s, bool pinned, std::uint64_t task_id,
                       const char* task_name, SpawnLocation where) noexcept
    : FramePrefix{0, true, false},
      pinned_for_life(pinned),
      state(kNotified | kJoinInterest | 3 * kRefOne),
      promise(&p),
      scheduler(s),
      id(task_id),
      name(task_name),
      spawn_file(where.file),
      spawn_line_bits(where.line) {}

namespace {

// Inlined into both callers: each passes its arguments on in registers.
[[gnu::always_inline]] inline TaskHeader* build_header(TaskPromiseBase& promise,
                                                       std::coroutine_handle<> frame,
                                                       Scheduler* scheduler, const char* name,
                                                       SpawnLocation where,
                                                       bool pinned_for_life) noexcept {
  FramePrefix* prefix = TaskPromiseBase::prefix_of(frame.address());
  std::uint16_t size_class = prefix->size_class;  // the header takes the prefix's place
  // A spawned task's first poll may come long after (a burst of spawns); a blocking call's
  // runs on a blocking-pool thread, whose core would not get the lines.
  if (!pinned_for_life) prefetch_frame_locals(prefix, size_class);
  std::uint64_t id = new_task_id();
  prefix->~FramePrefix();
  auto* t = ::new (static_cast<void*>(prefix))
      TaskHeader(promise, scheduler, pinned_for_life, id, name, where);
  t->size_class = size_class;
  assert(t->frame() == frame);
  return t;
}

}  // namespace

TaskHeader* new_task(TaskPromiseBase& promise, std::coroutine_handle<> frame, Scheduler* scheduler,
                     const char* name, SpawnLocation where) noexcept {
  return build_header(promise, frame, scheduler, name, where, false);
}

TaskHeader* new_pinned_task(TaskPromiseBase& promise, std::coroutine_handle<> frame,
                            Scheduler* scheduler, SpawnLocation where) noexcept {
  return build_header(promise, frame, scheduler, nullptr, where, true);
}

const TaskHeader* current_task() noexcept {
  const PollScope* poll = current_poll;
  if (poll == nullptr || poll->own().vtable != &task_waker_vtable) return nullptr;
  return static_cast<const TaskHeader*>(poll->own().data);
}

namespace {

// Polls a task its caller claimed, once: true if it finished. `deferred_self`: it yielded
// itself (its run reference is to go to the deferred list).
[[gnu::always_inline]] inline bool poll_claimed(TaskHeader* t, ReactorSlot* slot,
                                                bool& deferred_self) {
  BorrowedWaker waker(t);
  Context cx(waker.get(), slot);
  BudgetScope budget(t->state);
  PollScope poll(waker.get().as_raw());
  const bool done = run_chain(*t->promise, t->frame(), cx);
  deferred_self = poll.deferred_self();
  return done;
}

}  // namespace

void run_task(TaskHeader* t, ReactorSlot* slot) {
  switch (transition_to_running(*t)) {
    case RunClaim::kPoll:
      break;
    case RunClaim::kCancel:
      cancel(t);
      return;
    case RunClaim::kNone:
      return;
    case RunClaim::kDealloc:
      dealloc(t);
      return;
  }
  TaskHeader::count(t->polls);
  // The runtime's poll hooks or task times, if any: set before any task ran, never changed.
  // One predicted branch picks a copy of the poll, bare or observed (an observed poll out
  // of line cost more than the hooks' own calls).
  bool deferred_self;
  bool done;
  if (const TaskObserver* o = t->scheduler->poll_observer(); o == nullptr) [[likely]] {
    done = poll_claimed(t, slot, deferred_self);
  } else {
    const TaskMeta meta = o->meta(*t);
    o->before_poll(*t, meta);
    done = poll_claimed(t, slot, deferred_self);
    o->after_poll(*t, meta);
  }
  if (done) {
    t->waiting_on.store(nullptr, std::memory_order_relaxed);
    complete(t);
    return;
  }
  t->waiting_on.store(t->promise->waiting_on(), std::memory_order_relaxed);
  if (deferred_self) {
    // The task yielded itself: idle and NOTIFIED at once, its run reference now owned by
    // its entry in the deferred list.
    TaskHeader::count(t->self_wakes);
    if (!transition_to_idle_deferred(*t)) {
      cancel(t);
    } else if (!push_deferred(t)) {
      t->scheduler->schedule(t, true);  // no room in the list: requeue it now instead
    }
    return;
  }
  switch (transition_to_idle(*t)) {
    case IdleResult::kIdle:
      return;
    case IdleResult::kNotified:
      TaskHeader::count(t->self_wakes);
      t->scheduler->schedule(t, true);  // woken during its own poll: one more poll, later
      return;
    case IdleResult::kCancel:
      cancel(t);
      return;
    case IdleResult::kDealloc:
      dealloc(t);
      return;
  }
}

void shutdown_task(TaskHeader* t) {
  if (transition_to_shutdown(*t)) {
    cancel(t);  // the list's reference served as the claim
  } else {
    drop_task_refs(t);
  }
}

void drop_task_refs(TaskHeader* t, std::uint64_t n) noexcept {
  if (ref_dec(*t, n)) dealloc(t);
}

Waker task_waker(TaskHeader* t) {
  ref_inc_waker(*t);
  return Waker::from_raw({t, &task_waker_vtable});
}

void Scheduler::set_observer(const TaskObserver* observer) noexcept {
  observer_ = observer;
  poll_observer_ = observer != nullptr && observer->observes_polls() ? observer : nullptr;
}

void submit_woken(TaskHeader* t, bool is_yield) noexcept {
  // Task times, the only thing a wake tells, make the observer a poll observer.
  if (const TaskObserver* o = t->scheduler->poll_observer()) [[unlikely]]
    o->woken(*t);
  t->scheduler->schedule(t, is_yield);
}

bool wake_deferred(DeferredWakes& list) {
  return list.drain(
      [](std::span<TaskHeader* const> tasks) {
        // Each run of one scheduler's tasks to that scheduler in one call.
        while (!tasks.empty()) {
          Scheduler* s = tasks.front()->scheduler;
          std::size_t n = 1;
          while (n < tasks.size() && tasks[n]->scheduler == s) ++n;
          s->schedule_yielded(tasks.first(n));
          tasks = tasks.subspan(n);
        }
      },
      [](Waker&& w) {
        const RawWaker& raw = w.as_raw();
        if (raw.vtable != &task_waker_vtable) {
          std::move(w).wake();
          return;
        }
        auto* t = static_cast<TaskHeader*>(const_cast<void*>(raw.data));
        if (transition_to_notified_by_ref(*t) == WakeResult::kSubmit) submit_woken(t, true);
        // `w` keeps its reference: dropped when it goes out of scope.
      });
}

// --- JoinHandle operations (spool/detail/join.hpp) ---

std::optional<Inspection> inspect_task(TaskHeader* t) {
  // COMPLETE (acquire: final once seen): the runtime may be gone, and there is no chain.
  // Otherwise the scheduler is alive until the task completes, and should it complete now,
  // the completer pins it for this reference (docs/tasks.md, "Who keeps the scheduler
  // alive"): the pin then keeps it for the give-back below, which may schedule the task.
  std::shared_ptr<void> pin;
  if (t->state.load(std::memory_order_acquire) & kComplete || !(pin = t->scheduler->pin())) {
    drop_task_refs(t);
    return std::nullopt;
  }
  InspectionCount& readers = t->scheduler->owned().inspections();
  readers.enter();  // before the claim: a shutdown waits for the give-back
  if (!transition_to_inspecting(*t)) {
    readers.leave();
    drop_task_refs(t);
    return std::nullopt;
  }
  std::optional<Inspection> seen;
  std::exception_ptr failed;
  try {
    // Claimed and idle: no queue entry holds a reference. A wake meanwhile may drop its
    // Waker's (by value) as it sets NOTIFIED, and a cancel may let the list's go: then the
    // count is unknown.
    const std::uint64_t s = t->state.load(std::memory_order_relaxed);
    const std::uint64_t others = 2 + ((s & kJoinInterest) ? 1 : 0);  // list, reader, JoinHandle
    seen.emplace(Inspection{t->promise->waiting_backtrace(), std::nullopt, wakers_made(s)});
    if (!(s & (kNotified | kCancelled))) {
      seen->wakers = ref_count(s) > others ? ref_count(s) - others : 0;
    }
  } catch (...) {
    failed = std::current_exception();  // (no memory for the frames: given back first)
  }
  // A wake or an abort that came meanwhile: the task goes to its queue with this reference,
  // and a runtime thread polls or cancels it.
  if (transition_from_inspecting(*t)) submit_woken(t, false);
  readers.leave();
  if (failed) std::rethrow_exception(failed);
  demangle_branches(seen->backtrace);  // given back: the reader's time is its own now
  return seen;
}

std::optional<Backtrace> join_backtrace(TaskHeader* t) {
  ref_inc(*t);  // inspect_task's, made from the JoinHandle's
  std::optional<Inspection> seen = inspect_task(t);
  if (!seen) return std::nullopt;
  return std::move(seen->backtrace);
}

bool join_poll_complete(TaskHeader* t, const Waker& waker) {
  return join_register_waker(*t, waker);
}

bool join_output_cancelled(const TaskHeader* t) noexcept { return t->output_cancelled; }

TaskPromiseBase& join_promise(TaskHeader* t) noexcept { return *t->promise; }

bool join_is_finished(const TaskHeader* t) noexcept {
  return (t->state.load(std::memory_order_acquire) & kComplete) != 0;
}

void join_abort(TaskHeader* t) noexcept {
  // A reference of this call's own across schedule(): should the task complete before that
  // call returns, complete() counts it and pins the scheduler (the JoinHandle's does not).
  ref_inc(*t);
  if (transition_to_notified_and_cancel(*t) == WakeResult::kSubmit) {
    submit_woken(t, false);
  } else if (t->pinned_for_life && t->scheduler->take_queued(t)) {
    // A blocking call still queued behind busy pool threads (perhaps for good, when no
    // thread can start): cancelled here, so that its JoinHandle need not wait for them.
    run_task(t, nullptr);  // claims it as cancelled (CANCELLED is set) and cancels it
  }
  drop_task_refs(t);
}

void join_cancel_now(TaskHeader* t) noexcept {
  ref_inc(*t);  // the claim's reference, should this thread claim the task
  if (transition_to_shutdown(*t)) {
    cancel(t);  // consumes the claim's reference
  } else {
    drop_task_refs(t);  // running (its poller cancels it) or complete
  }
}

std::shared_ptr<void> pin_runtime_of(const TaskHeader* t) noexcept { return t->scheduler->pin(); }

void join_drop(TaskHeader* t) noexcept {
  // Not complete: one CAS dropped the interest and the reference (complete() destroys the
  // frame). Complete: this thread alone destroys the frame, then lets go (state.hpp).
  HeaderActions c{t, 0};  // (own: unused by drop_join_interest)
  drop_join_interest(t->state, c);
}

void task_ref_inc(TaskHeader* t) noexcept { ref_inc_waker(*t); }

void task_ref_drop(TaskHeader* t) noexcept { drop_task_refs(t); }

std::uint64_t join_task_id(const TaskHeader* t) noexcept { return t->id; }

}  // namespace spool::detail
