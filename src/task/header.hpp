// The header of a spawned task. It lives in the prefix in front of the task's coroutine
// frame (see kFramePrefixSize in spool/core/task.hpp), so a spawned task is one allocation.
#pragma once

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <typeinfo>

#include "spool/core/task.hpp"
#include "spool/core/waker.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/task_meta.hpp"
#include "task/task_times.hpp"

namespace spool::detail {

class Scheduler;
class TaskHeader;

// The task state word. Bits:
//   RUNNING       a thread has claimed the task (to poll it, cancel it, or shut it down).
//                 Set by transition_to_running / transition_to_shutdown, cleared by
//                 transition_to_idle or transition_to_complete. Never set twice at once:
//                 this is what keeps two threads from polling one task.
//   COMPLETE      the task finished or was cancelled; its output (or the absence of one)
//                 is final. Once set, never unset.
//   NOTIFIED      a wake-up is pending. Set while idle: the task is (being) put in a run
//                 queue, and that queue entry owns a reference. Set while RUNNING: the
//                 poller must poll once more (transition_to_idle reschedules it).
//   CANCELLED     abort() or shutdown asked for cancellation; the next claim cancels
//                 instead of polling, and a poll in progress ends at its next cooperative
//                 point (context/budget.hpp). Once set, never unset.
//   JOIN_INTEREST a JoinHandle exists. Cleared once, when it is dropped.
//   JOIN_WAKER    join_waker holds the JoinHandle's waker, for complete() to wake. Set
//                 and cleared by the JoinHandle only (state.hpp, join_register_waker).
//   bits 6..37    reference count. References: the owned-task list, each run-queue entry
//                 (a notification), the JoinHandle, and every Waker clone and AbortHandle.
//   bits 38..63   Wakers made: each Waker clone and AbortHandle, counted by the RMW that adds
//                 its reference (so the count costs nothing), modulo 2^26, never decreased.
//                 For display only (TaskSnapshot::waker_clones): no transition reads it.
// Every transition is one CAS or RMW on this word with acq_rel ordering: the release half
// publishes what the previous holder did to the frame and the output; the acquire half
// makes it visible to the next. (A detached task's completer left alone with it frees it
// without one: the word then still shows RUNNING, never COMPLETE. state.hpp,
// complete_claimed.)
inline constexpr std::uint64_t kRunning = 1u << 0;
inline constexpr std::uint64_t kComplete = 1u << 1;
inline constexpr std::uint64_t kNotified = 1u << 2;
inline constexpr std::uint64_t kCancelled = 1u << 3;
inline constexpr std::uint64_t kJoinInterest = 1u << 4;
inline constexpr std::uint64_t kJoinWaker = 1u << 5;
inline constexpr std::uint64_t kRefOne = 1u << 6;
inline constexpr std::uint64_t kFlagMask = kRefOne - 1;
inline constexpr std::uint64_t kMadeOne = std::uint64_t{1} << 38;
// Past this many references, a new Waker is refused (the program ends): a few more (run-queue
// entries, an inspection) must still fit below the Wakers-made bits.
inline constexpr std::uint64_t kMaxWakerRefs = (kMadeOne >> 6) - 64;

inline constexpr std::uint64_t ref_count(std::uint64_t state) {
  return (state & (kMadeOne - 1)) >> 6;
}
inline constexpr std::uint32_t kWakersMadeMask = (1u << 26) - 1;  // the count is modulo 2^26
inline constexpr std::uint32_t wakers_made(std::uint64_t state) {
  return static_cast<std::uint32_t>(state >> 38);
}

// What a task of an earliest-deadline-first channel carries (in its TaskSide). Spawn sets
// the deadline (time_point::max(): none) before the task is published; the EDF queue
// (scheduler/edf_queue.hpp) writes and reads the rest under its lock.
struct EdfNode {
  explicit EdfNode(std::chrono::steady_clock::time_point deadline) noexcept
      : deadline_ticks(deadline.time_since_epoch().count()) {}

  std::chrono::steady_clock::duration::rep deadline_ticks;
  TaskHeader* heap_child = nullptr;  // the EDF heap's child link
  // The EDF heap's arrival order, which breaks deadline ties (set at push).
  std::uint64_t heap_seq = 0;
  // Set the first time the queue hands the task out: only the first start counts as a
  // deadline miss.
  bool deadline_checked = false;
};

// What some tasks carry besides their header: the EDF node of a task of an
// earliest-deadline-first channel, the time counters of a task of a runtime that measures task
// times (TaskObserver::timed). One block from the frame pool, with only the parts the task
// needs, made by its spawn before the task is published and freed with the header; the other
// tasks' headers hold a null pointer.
struct TaskSide {
  EdfNode* edf = nullptr;             // in the block, or null
  TaskTimeCounters* times = nullptr;  // in the block, or null
  std::uint16_t size_class = 0;       // the frame pool's, for the block's deallocation

  struct Free {
    void operator()(TaskSide* side) const noexcept;
  };
  using Ptr = std::unique_ptr<TaskSide, Free>;
  // A block with an EdfNode for `edf_deadline` (if not null) and time counters from now (if
  // `timed`). Throws std::bad_alloc.
  static Ptr make(const std::chrono::steady_clock::time_point* edf_deadline, bool timed);
};

// The fields are ordered so that the small ones fill the 4 bytes after the FramePrefix and
// the header fits kFramePrefixSize (the static_assert below).
class TaskHeader : public FramePrefix {
 public:
  TaskHeader(TaskPromiseBase& promise, Scheduler* scheduler, bool pinned_for_life, std::uint64_t id,
             const char* name, SpawnLocation where) noexcept;
  ~TaskHeader() {
    if (spawn_line_bits & kNameOwnedBit) delete[] name;
  }
  TaskHeader(const TaskHeader&) = delete;
  TaskHeader& operator=(const TaskHeader&) = delete;

  // The channel (scheduler/levels.hpp) the task was spawned onto; every wake-up queues it
  // there again. Set by the spawn before the task is published (0 until then: a runtime
  // with one channel writes nothing more), never changed after.
  std::uint16_t channel = 0;

  // Written by the claimer before COMPLETE is set (release); read by the JoinHandle after
  // it saw COMPLETE (acquire).
  bool output_cancelled = false;

  // A blocking call, pinned from its spawn on: its JoinHandle's abort may call take_queued.
  const bool pinned_for_life;

  // See the bit list above. Initially NOTIFIED | JOIN_INTEREST with three references: the
  // owned-task list, the first run-queue entry, and the JoinHandle.
  Atomic<std::uint64_t> state;

  // Intrusive links, each touched only by the owner of the structure the task is in:
  TaskHeader* queue_next = nullptr;  // inject queue / blocking queue / EDF heap sibling
  TaskHeader* owned_prev = nullptr;  // owned-task list (under its shard lock)
  TaskHeader* owned_next = nullptr;

  TaskPromiseBase* const promise;
  Scheduler* const scheduler;
  // Keeps `scheduler` alive for a wake that submitted the task before it completed and has
  // yet to call schedule() (docs/tasks.md, "Who keeps the scheduler alive"). Written by the
  // spawner before publication or by the completing claimer before its last RMW; read by
  // ~TaskHeader, after the last reference.
  std::shared_ptr<void> scheduler_pin;
  const std::uint64_t id;

  // The JoinHandle's waker (a no-op one until its first pending poll). Written by the
  // JoinHandle only while JOIN_WAKER is clear and the task unfinished; read by complete()
  // only if its COMPLETE RMW saw JOIN_WAKER; the bit's RMWs order the two (state.hpp).
  Waker join_waker;

  // What the task's chain last waited on (for dump()); written by the poller, read by
  // dump() from any thread; relaxed, since it is for display only.
  std::atomic<const std::type_info*> waiting_on{nullptr};

  // Null unless the task needs one (TaskSide).
  TaskSide::Ptr side;

  // The task's name (spool::named; null: none) and spawn location, set by the spawn before
  // the task is published and never changed: any thread may read them after. A copied name
  // (kNameOwnedBit in spawn_line_bits) is freed with the header.
  const char* const name;
  const char* const spawn_file;
  const std::uint32_t spawn_line_bits;

  // The line of the spawn call (0: unknown).
  std::uint32_t spawn_line() const noexcept { return spawn_line_bits & ~kNameOwnedBit; }

  // Per-task counts (Runtime::tasks()), modulo 2^32. Written only by the thread that holds
  // the claim (RUNNING), as a relaxed load and store, never an RMW; read by any thread
  // (relaxed: figures for display, ordered with nothing). Plain std::atomic, as waiting_on:
  // no protocol for the model checker to explore, and its pointer-sized Atomic would not
  // fit the prefix.
  // Polls: one per poll (not the claim that cancels).
  std::atomic<std::uint32_t> polls{0};
  // Polls that ended with the task already woken again: it yielded (yield_now) or its waker
  // was woken while it ran (by itself, as a leaf out of budget does, or, rarely, by another
  // thread during the poll).
  std::atomic<std::uint32_t> self_wakes{0};

  // Adds one to a count only the claimer writes.
  static void count(std::atomic<std::uint32_t>& counter) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // The coroutine frame, which follows the prefix the header lives in.
  std::coroutine_handle<> frame() const noexcept {
    const auto* prefix = reinterpret_cast<const std::byte*>(static_cast<const FramePrefix*>(this));
    return std::coroutine_handle<>::from_address(const_cast<std::byte*>(prefix) + kFramePrefixSize);
  }

  // The deadline of a task of an EDF channel.
  std::chrono::steady_clock::time_point deadline() const noexcept {
    return std::chrono::steady_clock::time_point(
        std::chrono::steady_clock::duration(side->edf->deadline_ticks));
  }
};

inline void TaskSide::Free::operator()(TaskSide* side) const noexcept {
  // (The parts are trivially destructible: the block goes back as it is.)
  deallocate_frame(side, side->size_class);
}

inline TaskSide::Ptr TaskSide::make(const std::chrono::steady_clock::time_point* edf_deadline,
                                    bool timed) {
  static_assert(sizeof(TaskSide) % alignof(EdfNode) == 0 &&
                sizeof(EdfNode) % alignof(TaskTimeCounters) == 0 &&
                std::is_trivially_destructible_v<EdfNode> &&
                std::is_trivially_destructible_v<TaskTimeCounters>);
  const std::size_t edf_bytes = edf_deadline != nullptr ? sizeof(EdfNode) : 0;
  std::uint16_t size_class = 0;
  auto* block = static_cast<std::byte*>(allocate_frame(
      sizeof(TaskSide) + edf_bytes + (timed ? sizeof(TaskTimeCounters) : 0), size_class));
  Ptr side(new (block) TaskSide);
  side->size_class = size_class;
  if (edf_deadline != nullptr) side->edf = new (block + sizeof(TaskSide)) EdfNode(*edf_deadline);
  if (timed)
    side->times = new (block + sizeof(TaskSide) + edf_bytes) TaskTimeCounters(TaskClock::now());
  return side;
}

static_assert(sizeof(TaskHeader) <= kFramePrefixSize,
              "kFramePrefixSize in spool/core/task.hpp must hold the task header");

}  // namespace spool::detail
