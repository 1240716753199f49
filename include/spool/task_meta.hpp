// Task names and spawn locations: spool::named, spool::SpawnLocation (docs/observability.md).
#pragma once

#include <array>
#include <bit>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "spool/config.hpp"
#include "spool/core/backtrace.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"

namespace spool {

namespace detail {
class SpawnSiteGuard;
struct TaskMetaAccess;
}  // namespace detail

/// Where a task was spawned: the file and line of the spawn call. Every spawn function takes
/// one as a defaulted last argument, so the caller's site is recorded with no annotation (a
/// wrapper that spawns for its caller can take one the same way and pass it on). Two words,
/// passed in registers; `file` points to a string literal the compiler made.
struct SpawnLocation {
  /// The source file of the spawn call (empty for a task spawned by spool itself).
  const char* file = "";
  /// Its line (0 when unknown).
  std::uint64_t line = 0;  // a full word: written and read whole (store forwarding)

  /// The location of the call that evaluates this default argument (std::source_location's
  /// file and line, which clang 14 with libstdc++ 12 does not have).
  static constexpr SpawnLocation current(const char* file = __builtin_FILE(),
                                         std::uint32_t line = __builtin_LINE()) noexcept {
    return SpawnLocation{file, line};
  }
};

/// What a task hook (Builder::on_task_spawn and the like) is told about a task: a view,
/// valid only during the hook's call (copy what you keep). Building it costs two pointers;
/// each accessor reads the task when called, so a hook pays only for what it asks.
class SPOOL_API TaskMeta {
 public:
  /// The task's id (JoinHandle::id()).
  std::uint64_t id() const noexcept;
  /// Its name (spool::named), empty when it has none.
  std::string_view name() const noexcept;
  /// The name of the channel it runs on ("default" without Builder::levels).
  std::string_view channel() const noexcept;
  /// Where it was spawned.
  SpawnLocation location() const noexcept;

 private:
  friend struct detail::TaskMetaAccess;
  TaskMeta(const void* task, const void* channels) noexcept : task_(task), channels_(channels) {}
  const void* task_;      // the task's header
  const void* channels_;  // its runtime's level table
};

/// Where a task's time went, measured by a runtime built with Builder::measure_task_times
/// (or run with SPOOL_TASK_TIMES=1). Each figure includes the period the task is in when asked: a
/// task idle for 3 s has at least 3 s of idle time.
struct TaskTimes {
  /// Buckets of poll_histogram: bucket 0 counts polls shorter than 1,024 ns, bucket i
  /// (0 < i < 20) polls of [2^(i+9), 2^(i+10)) ns, and bucket 20 every poll of 2^29 ns
  /// (about 0.54 s) or more.
  static constexpr std::size_t kPollBuckets = 21;
  /// Time inside its polls.
  std::chrono::nanoseconds busy{0};
  /// Time between a wake-up (or the spawn) and the poll that followed: queued, waiting for a
  /// worker.
  std::chrono::nanoseconds scheduled{0};
  /// Time between the end of a poll and the wake-up that queued it again: waiting on a
  /// timer, a socket, a channel...
  std::chrono::nanoseconds idle{0};
  /// Its longest single poll (a poll in progress counts for what it has lasted).
  std::chrono::nanoseconds longest_poll{0};
  /// Its finished polls, by duration (see kPollBuckets).
  std::array<std::uint32_t, kPollBuckets> poll_histogram{};

  /// The bucket of poll_histogram that counts a poll of `d`.
  static constexpr std::size_t bucket_of(std::chrono::nanoseconds d) noexcept {
    const auto ns = static_cast<std::uint64_t>(d.count() > 0 ? d.count() : 0);
    const auto b = static_cast<std::size_t>(std::bit_width(ns >> 10));
    return b < kPollBuckets ? b : kPollBuckets - 1;
  }
};

/// One live task as Runtime::tasks() saw it (a copy: it stays valid).
struct TaskSnapshot {
  /// What the task was doing.
  enum class State {
    kRunning,    ///< in a poll
    kScheduled,  ///< in a run queue, waiting for a worker
    kIdle,       ///< waiting for a wake-up
  };
  /// The task's id (JoinHandle::id()).
  std::uint64_t id = 0;
  /// Its name (spool::named), empty when it has none.
  std::string name;
  /// The name of its channel.
  std::string channel;
  /// Where it was spawned.
  SpawnLocation location;
  /// What it was doing.
  State state = State::kIdle;
  /// Whether an abort or the shutdown asked it to stop.
  bool cancel_requested = false;
  /// Times it was polled (modulo 2^32).
  std::uint32_t polls = 0;
  /// Wake-ups that led to a poll: every poll but the first (several wakes before a poll
  /// count once).
  std::uint32_t wakes = 0;
  /// Of those, the ones it caused itself: polls that ended with it woken again (yield_now,
  /// its own waker woken during the poll, or, rarely, another thread's wake during it).
  std::uint32_t self_wakes = 0;
  /// The leaf future its chain last waited on (its type's name, demangled); empty when
  /// unknown (never polled, or polled by a task that waits on nothing yet).
  std::string waiting_on;
  /// Where it waits, for a task that was idle when asked: the co_await sites of its chain,
  /// innermost first (JoinHandle::backtrace). Empty for a task running or scheduled.
  std::optional<Backtrace> backtrace;
  /// For a task that was idle when asked: the references that could wake it, its Wakers
  /// (kept by a timer, a socket, a channel...) and AbortHandles. 0 means nothing can wake
  /// it: the future it waits on returned pending without keeping its waker (a lost waker).
  /// Empty also once its cancellation was asked for.
  std::optional<std::uint32_t> wakers;
  /// Wakers cloned for it (a leaf keeping its Context's Waker clones it; a leaf under a
  /// combinator clones its branch's Waker instead, which is not the task's) and AbortHandles
  /// made, modulo 2^26: tokio-console's "waker clones", AbortHandles included as in `wakers`.
  /// Counted by the atomic operation that adds each one's reference: no atomic operation more.
  std::uint32_t waker_clones = 0;
  /// Of those, the ones gone since (dropped, or consumed by a wake by value): waker_clones -
  /// wakers, modulo 2^26, given when `wakers` is. A lower bound, as `wakers` is an upper one.
  std::optional<std::uint32_t> waker_drops;
  /// Where its time went; empty unless its runtime measures task times
  /// (Builder::measure_task_times).
  std::optional<TaskTimes> times;
  /// wakes - self_wakes: wake-ups from other tasks, timers, I/O or threads.
  /// (0 while a self-wake's poll is still to come).
  std::uint32_t wakes_by_others() const noexcept {
    return wakes > self_wakes ? wakes - self_wakes : 0;
  }
};

/// A task's name, as spool::named takes it: a string literal, kept as a pointer (nothing is
/// copied), or any other string (std::string, std::string_view, a `const char*`), which the
/// task copies and owns. A char array that is not a constant (a local buffer) is refused at
/// compile time, since it would not outlive the task: pass std::string(buffer) instead.
class TaskName {
 public:
  /// A name with static storage (a string literal): not copied.
  template <std::size_t N>
  consteval TaskName(const char (&literal)[N]) noexcept  // NOLINT(google-explicit-constructor)
      : text_(literal) {}
  /// Any other string: copied now (the spawn copies it once more into the task).
  template <class S>
  requires(std::is_convertible_v<const S&, std::string_view> &&
           !std::is_array_v<std::remove_cvref_t<S>>)
      TaskName(const S& text)  // NOLINT(google-explicit-constructor)
      : text_(copy(std::string_view(text))), owned_(true) {}
  /// A copy (of the text too, when it is not a literal).
  constexpr TaskName(const TaskName& other)
      : text_(other.owned_ ? copy(other.text_) : other.text_), owned_(other.owned_) {}
  /// Takes `other`'s text; `other` keeps a null name.
  constexpr TaskName(TaskName&& other) noexcept
      : text_(std::exchange(other.text_, nullptr)), owned_(std::exchange(other.owned_, false)) {}
  /// Copy or move assignment.
  constexpr TaskName& operator=(TaskName other) noexcept {
    std::swap(text_, other.text_);
    std::swap(owned_, other.owned_);
    return *this;
  }
  /// Frees a copied text.
  constexpr ~TaskName() {
    if (owned_) delete[] text_;
  }

  /// The name's text (null-terminated; null after a move).
  const char* c_str() const noexcept { return text_; }
  /// True for a string literal, kept as a pointer; false for a copy.
  bool is_literal() const noexcept { return !owned_; }

 private:
  friend class detail::SpawnSiteGuard;

  static constexpr char* copy(std::string_view text) {
    char* p = new char[text.size() + 1];
    for (std::size_t i = 0; i < text.size(); ++i) p[i] = text[i];
    p[text.size()] = '\0';
    return p;
  }
  const char* text_ = nullptr;
  bool owned_ = false;
};

/// A future with a name for the task it is spawned as: what spool::named returns. Every
/// spawn function (spawn, spawn_on, spawn_at, Handle's and Runtime's, JoinSet's,
/// TaskTracker's) takes the name off and spawns the future itself, so the name costs the
/// task no frame; awaited or polled directly, it is `fut` (the name is unused).
template <Future F>
class Named {
 public:
  /// What the wrapped future produces.
  using Output = future_output_t<F>;

  /// Names `fut`.
  Named(TaskName name, F fut) : name_(std::move(name)), fut_(std::move(fut)) {}

  /// Polls the wrapped future.
  Poll<Output> poll(Context& cx) { return fut_.poll(cx); }

  /// The name.
  const TaskName& name() const noexcept { return name_; }
  /// The wrapped future.
  const F& future() const& noexcept { return fut_; }
  /// Takes the wrapped future out (a spawn does).
  F&& take_future() && noexcept { return std::move(fut_); }
  /// Takes the name out (a wrapper that re-wraps the future does).
  TaskName&& take_name() && noexcept { return std::move(name_); }

 private:
  friend class detail::SpawnSiteGuard;
  TaskName name_;
  F fut_;
};

/// Names the task that `fut` (a Task or any Future, moved in) will be spawned as:
/// `spool::spawn(spool::named("conn", serve(socket)))`. The name shows in Runtime::dump(),
/// in the TaskMeta the task hooks receive and in Runtime::tasks(). A string literal costs
/// nothing; any other string is copied once, at the spawn, and freed with the task.
template <Future F>
Named<std::remove_cvref_t<F>> named(TaskName name, F&& fut) {
  return Named<std::remove_cvref_t<F>>(std::move(name), std::forward<F>(fut));
}

namespace detail {

template <class F>
inline constexpr bool is_named_v = false;
template <class F>
inline constexpr bool is_named_v<Named<F>> = true;

// The bit of a SpawnSite's `where.line` that says its `name` is a copy (new[]) that whoever
// holds the site frees: the guard below, then the spawn, then the task's header.
inline constexpr std::uint32_t kNameOwnedBit = std::uint32_t{1} << 31;

// What a spawn records in the new task's header: its name (null: none) and where it was
// spawned. Passed to the spawn as three scalars, in registers.
struct SpawnSite {
  const char* name = nullptr;
  SpawnLocation where;
};

// The SpawnSite of a spawn of a Named future at `where`, made before the spawn takes the
// future over: it takes the future's copied name (its text stays valid) and frees it unless
// hand_over() gave it to the spawn.
class SpawnSiteGuard {
 public:
  template <class F>
  SpawnSiteGuard(F&& fut, SpawnLocation where) noexcept : site_{nullptr, where} {
    static_assert(!std::is_lvalue_reference_v<F>,
                  "spawn a spool::named future as an rvalue (std::move it)");
    TaskName& n = fut.name_;
    site_.name = n.text_;
    if (std::exchange(n.owned_, false)) site_.where.line |= kNameOwnedBit;
  }
  ~SpawnSiteGuard() {
    if (site_.where.line & kNameOwnedBit) delete[] site_.name;
  }
  SpawnSiteGuard(const SpawnSiteGuard&) = delete;
  SpawnSiteGuard& operator=(const SpawnSiteGuard&) = delete;

  // The site; from now on the spawn owns its copied name (and frees it should it fail).
  SpawnSite hand_over() noexcept {
    SpawnSite site = site_;
    site_.where.line &= ~kNameOwnedBit;
    return site;
  }

 private:
  SpawnSite site_;
};

// The same for an unnamed future: nothing to own, so nothing to destroy (a spawn inlines it).
struct UnnamedSite {
  SpawnLocation where;
  SpawnSite hand_over() const noexcept { return SpawnSite{nullptr, where}; }
};

// The site of a spawn of `fut` at `where`: a SpawnSiteGuard for a Named future, else an
// UnnamedSite.
template <class F>
auto spawn_site(F&& fut, SpawnLocation where) noexcept {
  if constexpr (is_named_v<std::remove_cvref_t<F>>) {
    return SpawnSiteGuard(std::forward<F>(fut), where);
  } else {
    return UnnamedSite{where};
  }
}

// The future a spawn of `fut` runs: a Named's wrapped one (moved out of an rvalue, to be
// copied from an lvalue, as `fut` itself would be), else `fut` itself.
template <class F>
decltype(auto) unnamed(F&& fut) noexcept {
  if constexpr (is_named_v<std::remove_cvref_t<F>>) {
    if constexpr (std::is_lvalue_reference_v<F>) {
      return fut.future();
    } else {
      return std::move(fut).take_future();
    }
  } else {
    return std::forward<F>(fut);
  }
}

}  // namespace detail
}  // namespace spool
