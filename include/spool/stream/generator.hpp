// spool::Generator<T>: an async generator — a coroutine that co_yields values and co_awaits
// anything a spool::Task can await (leaf futures, Tasks, other generators' next()).
//
// How it runs: on the Task trampoline of spool/core/task.hpp, not on a loop of its own. A
// generator's promise is a TaskPromiseBase, so it is a coroutine of a TaskChain like a Task
// (same frame pool, same leaf handling):
//   - `co_await gen.next()` inside a Task or a Generator runs the generator next in the
//     awaiting chain; each co_yield, and its end, hands the chain back to the awaiting
//     coroutine. A nest of generators and Tasks therefore grows the chain, never the stack.
//     (A polled level — an adapter, select, timeout over next() — runs its generator in a
//     chain of its own: one run_chain frame on the stack per such level.)
//   - poll_next (the Stream interface) runs it as the outermost coroutine of its own chain,
//     kept in its promise: a pending poll_next leaves its leaf there, and the next poll_next
//     goes on from it, so dropping the future of one poll loses nothing. A `co_await
//     gen.next()` that finds it so left polls it as its own leaf.
// One value is in flight at a time: the body runs only while a next() or poll_next asks for
// a value, and stops at the co_yield that gives it.
#pragma once

#include <coroutine>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/task.hpp"
#include "spool/detail/fatal_misuse.hpp"
#include "spool/stream/stream.hpp"

namespace spool {

template <class T>
class Generator;

namespace detail {

// Where a generator stands between the calls that drive it.
enum class GeneratorPhase : std::uint8_t {
  kIdle,       // not started, or stopped at a co_yield whose value was taken: may run
  kPolled,     // a poll_next returned pending: a poll_next or a co_await of next() goes on
  kAsLeaf,     // a co_await of next() waits on that pending run as its chain's leaf
  kRunning,    // a poll_next (or that leaf's poll) runs it now: asking it again throws
  kAwaited,    // a co_await of next() runs it in the awaiting chain
  kAbandoned,  // that co_await was destroyed while the generator waited inside: it cannot go on
  kEnded,      // the end (or the body's exception) was delivered
};

// The error for driving a generator in `phase` through `call` (a phase other than kIdle).
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_generator_misuse(GeneratorPhase phase,
                                                                          const char* call) {
  const std::string prefix = std::string("spool::Generator::") + call + ": ";
  switch (phase) {
    case GeneratorPhase::kAbandoned:
      throw std::logic_error(prefix +
                             "a co_await of next() was destroyed while the generator waited "
                             "inside it (its task was cancelled), so it cannot go on; destroy "
                             "it (for a next() that may be cancelled, use spool::timeout or "
                             "select on next(), which poll it and can go on)");
    case GeneratorPhase::kEnded:
      throw std::logic_error(prefix +
                             "the generator has already ended (a next() gave nullopt or "
                             "threw); stop at the first nullopt");
    default:  // kAsLeaf, kRunning or kAwaited (a kPolled generator goes on)
      throw std::logic_error(prefix +
                             "a previous next() has not completed yet: a co_await of next() "
                             "waits on the generator (a generator gives one value at a time: "
                             "ask again once it gave it), or the generator asked for its own "
                             "next(), which would wait on itself");
  }
}
[[noreturn, gnu::cold, gnu::noinline]] inline void throw_empty_generator(const char* call) {
  throw std::logic_error(std::string("spool::Generator::") + call +
                         ": the generator is empty (default-constructed or moved from)");
}

template <class T>
class GeneratorNextAwaiter;

// The promise: a chain coroutine (TaskPromiseBase) with the yielded value's slot. It is
// also the leaf a co_await of next() waits on when the generator was left kPolled.
template <class T>
class GeneratorPromise : public TaskPromiseBase, private PendingLeaf {
 public:
  Generator<T> get_return_object() noexcept;

  // Keeps the value until a next() takes it, and hands the chain back to the awaiting
  // coroutine (or ends the poll loop).
  template <class U = T>
  requires std::is_constructible_v<T, U&&> ResumeContinuation yield_value(U&& v) {
    value_.emplace(std::forward<U>(v));
    return {};
  }
  void return_void() noexcept {}

  // The Stream interface: runs the generator as the outermost of its own chain.
  Poll<std::optional<T>> poll_next(std::coroutine_handle<> self, Context& cx) {
    if (phase_ != GeneratorPhase::kPolled) {
      check_can_run("poll_next");
      begin_outermost(self);
      continuation_ = nullptr;  // may hold the coroutine that awaited the last next()
    }
    if (!run_polled(self, cx, GeneratorPhase::kPolled)) return pending;
    return Poll<std::optional<T>>(take_outcome());
  }

  // Throws, saying why, unless the generator may run now.
  void check_can_run(const char* call) const {
    if (phase_ != GeneratorPhase::kIdle) throw_generator_misuse(phase_, call);
  }

 private:
  friend class GeneratorNextAwaiter<T>;
  friend class Generator<T>;

  using Handle = std::coroutine_handle<GeneratorPromise>;

  // Runs the generator's own chain: true once the body stopped at a co_yield or ended,
  // false while it waits on a leaf (the phase is then `waiting`).
  bool run_polled(std::coroutine_handle<> self, Context& cx, GeneratorPhase waiting) {
    phase_ = GeneratorPhase::kRunning;  // a poll of its own next() from inside throws
    if (!run_chain(*this, self, cx) && !value_) {
      phase_ = waiting;
      return false;
    }
    return true;
  }
  // For a co_await of next() on a kPolled generator: runs it now in its own chain (true:
  // the value or end is there), else makes it the leaf of the chain of `awaiting` (whose
  // promise is `ap`), which goes on after it.
  bool run_or_wait_as_leaf(TaskPromiseBase& ap, std::coroutine_handle<> awaiting) {
    TaskChain& chain = ap.chain();
    if (run_polled(Handle::from_promise(*this), *chain.cx, GeneratorPhase::kAsLeaf)) return true;
    poll_fn = &poll_as_leaf;
    kind = &kLeafKind;
    chain.wait_on(this, awaiting, ap);
    return false;
  }
  static constexpr LeafKind kLeafKind{&typeid(GeneratorPromise), nullptr};
  static bool poll_as_leaf(PendingLeaf* leaf, Context& cx) {
    auto& self = static_cast<GeneratorPromise&>(*leaf);
    return self.run_polled(Handle::from_promise(self), cx, GeneratorPhase::kAsLeaf);
  }

  // After the body stopped at a co_yield or ended: the value, or nullopt at the end (the
  // body's exception is rethrown instead). The result is built from the value, not copied
  // from value_: yield_value just wrote value_ with two stores, and a copy of the whole
  // optional reads them with one wide load, a store-forwarding stall per value (W18).
  std::optional<T> take_outcome() {
    if (value_) [[likely]] {
      phase_ = GeneratorPhase::kIdle;
      std::optional<T> out(std::in_place, std::move(*value_));
      value_.reset();
      return out;
    }
    phase_ = GeneratorPhase::kEnded;
    rethrow_if_failed();
    return std::nullopt;
  }

  std::optional<T> value_;  // the yielded value, until a next() takes it
  GeneratorPhase phase_ = GeneratorPhase::kIdle;
};

// `co_await gen.next()` in a Task or Generator: runs the generator in the awaiting chain.
// A generator that a dropped polled next() left pending (kPolled) waits inside its own chain
// instead: the awaiter then polls that chain as its own chain's leaf (the promise is it).
// Either way the value (or end, or exception) is in the promise when the awaiter resumes.
template <class T>
class GeneratorNextAwaiter {
 public:
  explicit GeneratorNextAwaiter(std::coroutine_handle<GeneratorPromise<T>> gen) noexcept
      : gen_(gen) {}
  GeneratorNextAwaiter(const GeneratorNextAwaiter&) = delete;
  GeneratorNextAwaiter& operator=(const GeneratorNextAwaiter&) = delete;
  // Destroyed while the generator runs for it (the awaiting task was cancelled): a generator
  // in the awaiting chain waits inside a chain that is going away, so it can never go on; one
  // polled as the chain's leaf still has its own chain, and goes on at the next ask.
  ~GeneratorNextAwaiter() {
    if (!running_) return;
    GeneratorPhase& phase = gen_.promise().phase_;
    phase = phase == GeneratorPhase::kAsLeaf ? GeneratorPhase::kPolled : GeneratorPhase::kAbandoned;
  }

  bool await_ready() const {
    GeneratorPromise<T>& gp = gen_.promise();
    if (gp.phase_ != GeneratorPhase::kPolled) gp.check_can_run("next");
    return false;
  }
  // False (resume at once) when a kPolled generator gave its outcome in this very poll.
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) noexcept {
    GeneratorPromise<T>& gp = gen_.promise();
    TaskPromiseBase& ap = awaiting.promise();
    running_ = true;
    if (gp.phase_ == GeneratorPhase::kPolled) [[unlikely]] {
      return !gp.run_or_wait_as_leaf(ap, awaiting);
    }
    gp.phase_ = GeneratorPhase::kAwaited;
    ap.run_child_next(awaiting, gp, gen_);
    return true;
  }
  std::optional<T> await_resume() {
    running_ = false;
    return gen_.promise().take_outcome();
  }

 private:
  std::coroutine_handle<GeneratorPromise<T>> gen_;
  bool running_ = false;  // between await_suspend and await_resume
};

}  // namespace detail

/// An async generator: a coroutine returning `Generator<T>` may `co_yield` values of T
/// (an object type; move-only included) and `co_await` anything a spool::Task can await.
/// Lazy: nothing runs until the first value is asked for, and the body runs only until the
/// co_yield that gives it (one value in flight: a slow consumer slows the producer).
///
/// Consume it with `while (auto v = co_await gen.next()) use(*v);` inside a Task or another
/// Generator, or as a spool::Stream (spool/stream/stream.hpp) through poll_next. The end is a
/// nullopt; an exception thrown by the body is rethrown by the next() (or poll_next) that reaches
/// it, after which the generator has ended. Asking again after the end, asking while a `co_await
/// gen.next()` runs it, or asking for its own next() from inside, throws std::logic_error;
/// polling again a next() (or poll_next) that returned pending is how one waits for the value.
///
/// Cancellation: destroying the Generator destroys its frame, and with it every local and
/// every Task or generator it was awaiting, exactly once. A pending poll_next (or a polled
/// next() future) may be dropped: a later poll_next or `co_await gen.next()` goes on from
/// where it stopped (the co_await then polls it as its leaf). A `co_await gen.next()` that
/// runs it in the awaiting chain and whose task is destroyed while the generator waits
/// inside leaves the generator unable to go on (using it then throws); destroy it. spawn,
/// join and Scope::spawn of a next() co_await it in the task they make, so the same holds.
///
/// Costs: one frame allocation (from spool's frame pool, with the prefix every Task frame
/// has: room for a spawned task's header) per generator, none per value; a value is moved
/// into the generator's slot and out to the consumer. Move-only; not
/// thread-safe (one consumer at a time, which may move between threads between calls).
template <class T>
class [[nodiscard]] Generator {
  static_assert(std::is_object_v<T> && !std::is_const_v<T> && !std::is_array_v<T>,
                "spool::Generator<T>: T must be a non-const object type (yield a pointer or a "
                "std::reference_wrapper to give references)");

 public:
  /// The coroutine's promise type, for the compiler (not for users).
  using promise_type = detail::GeneratorPromise<T>;
  /// The type of the values it yields.
  using value_type = T;

  /// The future of one value: `co_await gen.next()` gives std::optional<T> (nullopt at the
  /// end). Awaited in a Task or Generator it runs the generator in the awaiting chain; polled
  /// (spool::block_on, select, timeout) it is gen.poll_next. It must not outlive the generator.
  class Next {
   public:
    /// gen.poll_next(cx).
    Poll<std::optional<T>> poll(Context& cx) { return gen_.promise().poll_next(gen_, cx); }
    /// The awaiter `co_await` uses inside a Task or Generator (see spool/core/task.hpp).
    detail::GeneratorNextAwaiter<T> chain_awaiter() noexcept {
      return detail::GeneratorNextAwaiter<T>(gen_);
    }

   private:
    friend class Generator;
    explicit Next(std::coroutine_handle<promise_type> gen) noexcept : gen_(gen) {}
    std::coroutine_handle<promise_type> gen_;
  };

  /// An empty generator (asking it for a value throws).
  Generator() noexcept = default;
  /// Takes `other`'s frame over, also between polls (its state lives in the frame, which
  /// does not move); `other` is left empty.
  Generator(Generator&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  /// Destroys this generator's frame (as the destructor does), then takes `other`'s over.
  Generator& operator=(Generator&& other) noexcept {
    if (this != &other) {
      destroy();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  /// Destroys the frame and every local in it (see the class comment).
  ~Generator() { destroy(); }

  /// True unless the generator is empty (default-constructed or moved from).
  bool valid() const noexcept { return static_cast<bool>(handle_); }

  /// The next value as a future (see Next). Throws std::logic_error when empty.
  Next next() & { return Next(checked_handle("next")); }
  /// Refused at compile time: the future would borrow a temporary generator that is gone
  /// before it is awaited (`auto n = make_gen().next();`).
  Next next() && {
    static_assert(!std::is_same_v<T, T>,
                  "spool::Generator::next() on a temporary generator: the future would outlive "
                  "it; keep the generator in a variable (auto gen = make(); gen.next())");
    return next();
  }

  /// The Stream interface: runs the body until its next co_yield (ready with the value), its
  /// end (ready with nullopt; its exception is rethrown) or a leaf that is not ready (pending:
  /// the leaf stored cx's waker). Throws std::logic_error on misuse (see the class comment).
  Poll<std::optional<T>> poll_next(Context& cx) {
    return checked_handle("poll_next").promise().poll_next(handle_, cx);
  }

 private:
  friend promise_type;
  explicit Generator(std::coroutine_handle<promise_type> h) noexcept : handle_(h) {}

  std::coroutine_handle<promise_type> checked_handle(const char* call) const {
    if (!handle_) detail::throw_empty_generator(call);
    return handle_;
  }
  void destroy() noexcept {
    if (!handle_) return;
    const detail::GeneratorPhase phase = handle_.promise().phase_;
    if (phase == detail::GeneratorPhase::kAwaited || phase == detail::GeneratorPhase::kAsLeaf) {
      // A co_await of next() waits inside this frame: the awaiting chain would resume it.
      detail::fatal_misuse(
          "spool::Generator destroyed while a co_await of its next() is pending; keep the "
          "generator alive until that co_await completes (or destroy the awaiting task first)");
    }
    std::exchange(handle_, nullptr).destroy();
  }

  std::coroutine_handle<promise_type> handle_;
};

/// spool::next for a Generator: gen.next(), which nests without growing the stack.
template <class T>
typename Generator<T>::Next next(Generator<T>& gen) {
  return gen.next();
}

namespace detail {
template <class T>
Generator<T> GeneratorPromise<T>::get_return_object() noexcept {
  return Generator<T>(std::coroutine_handle<GeneratorPromise>::from_promise(*this));
}
}  // namespace detail

}  // namespace spool
