// spool::Waker: a type-erased, thread-safe handle that reschedules one task.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "spool/config.hpp"

namespace spool {

struct RawWaker;

/// The four operations behind a Waker. Every function must be thread-safe: a waker may be
/// cloned, woken and dropped on any thread, concurrently with the task being polled.
///  - clone(data): returns a new RawWaker that wakes the same task (usually: bump a count).
///  - wake(data): wakes the task and releases this handle's reference (consumes `data`).
///  - wake_by_ref(data): wakes the task; the handle stays valid.
///  - drop(data): releases this handle's reference without waking.
/// None of them may poll or resume a task inline: waking only schedules (no re-entrancy).
struct WakerVTable {
  /// Returns a new RawWaker for the same task.
  RawWaker (*clone)(const void* data);
  /// Wakes the task and releases the handle.
  void (*wake)(const void* data);
  /// Wakes the task; the handle stays valid.
  void (*wake_by_ref)(const void* data);
  /// Releases the handle without waking.
  void (*drop)(const void* data);
};

/// A data pointer plus the vtable that knows what it means.
struct RawWaker {
  /// What the vtable's functions receive: usually the task it wakes.
  const void* data;
  /// The operations on `data`; never null.
  const WakerVTable* vtable;
};

namespace detail {
// SPOOL_API: one address in the whole program, libspool.so included, so that will_wake
// compares equal for two noop wakers made on either side.
SPOOL_API inline constexpr WakerVTable noop_waker_vtable{
    [](const void*) {
      return RawWaker{nullptr, &noop_waker_vtable};
    },
    [](const void*) {},
    [](const void*) {},
    [](const void*) {},
};

template <class W>
concept WakeTarget = requires(W& w) {
  w.wake();
};

// Owns one std::shared_ptr<W> behind a reference count shared by every clone, so that
// cloning a Waker built from a shared_ptr never allocates.
template <WakeTarget W>
struct SharedWakerNode {
  explicit SharedWakerNode(std::shared_ptr<W> t) : target(std::move(t)) {}
  std::shared_ptr<W> target;
  // Clones: clone() increments (relaxed: a new reference is made from an existing one, as
  // shared_ptr does); drop/wake decrement with acq_rel so that the last one, which deletes
  // the node, sees every other holder's writes.
  std::atomic<std::size_t> refs{1};

  static RawWaker clone(const void* p) {
    auto* n = static_cast<SharedWakerNode*>(const_cast<void*>(p));
    n->refs.fetch_add(1, std::memory_order_relaxed);
    return RawWaker{n, &vtable};
  }
  static void drop(const void* p) {
    auto* n = static_cast<SharedWakerNode*>(const_cast<void*>(p));
    if (n->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete n;
  }
  static void wake_by_ref(const void* p) { static_cast<const SharedWakerNode*>(p)->target->wake(); }
  static void wake(const void* p) {
    wake_by_ref(p);
    drop(p);
  }
  static constexpr WakerVTable vtable{&clone, &wake, &wake_by_ref, &drop};
};
}  // namespace detail

/// A handle that wakes (reschedules) one task. Copying clones it, destroying drops it;
/// a moved-from Waker is the no-op waker. Thread-safe: any copy may be used on any thread.
/// Waking never runs the task inline; it only schedules the task's next poll.
class Waker {
 public:
  /// Takes ownership of `raw` (its reference is dropped by this Waker's destructor).
  static Waker from_raw(RawWaker raw) noexcept { return Waker(raw); }

  /// A waker that does nothing when woken.
  static Waker noop() noexcept { return Waker(RawWaker{nullptr, &detail::noop_waker_vtable}); }

  /// A waker that calls `target->wake()` each time it is woken, and keeps `target` alive
  /// while any clone exists. Allocates once; clones only bump a count.
  template <detail::WakeTarget W>
  static Waker from(std::shared_ptr<W> target) {
    using Node = detail::SharedWakerNode<W>;
    return Waker(RawWaker{new Node(std::move(target)), &Node::vtable});
  }

  /// The no-op waker.
  Waker() noexcept : raw_{nullptr, &detail::noop_waker_vtable} {}
  /// Clones `other` (another reference to the same task).
  Waker(const Waker& other) : raw_(other.raw_.vtable->clone(other.raw_.data)) {}
  /// Takes `other`'s reference; `other` becomes the no-op waker.
  Waker(Waker&& other) noexcept : raw_(std::exchange(other.raw_, Waker().raw_)) {}
  /// Drops this reference and clones `other`.
  Waker& operator=(const Waker& other) {
    if (this != &other && !will_wake(other)) *this = Waker(other);
    return *this;
  }
  /// Drops this reference and takes `other`'s.
  Waker& operator=(Waker&& other) noexcept {
    if (this != &other) {
      Waker old(std::move(*this));
      raw_ = std::exchange(other.raw_, Waker().raw_);
    }
    return *this;
  }
  ~Waker() { raw_.vtable->drop(raw_.data); }

  /// Wakes the task and consumes this handle (it becomes the no-op waker).
  void wake() && {
    RawWaker r = std::exchange(raw_, Waker().raw_);
    r.vtable->wake(r.data);
  }
  /// Wakes the task; this handle stays usable.
  void wake_by_ref() const { raw_.vtable->wake_by_ref(raw_.data); }

  /// True when both handles wake the same task in the same way (same data and vtable).
  /// A false answer does not prove they differ; it only means a clone may be needed.
  bool will_wake(const Waker& other) const noexcept {
    return raw_.data == other.raw_.data && raw_.vtable == other.raw_.vtable;
  }

  /// The raw parts, for executors that recognise their own wakers.
  const RawWaker& as_raw() const noexcept { return raw_; }

 private:
  explicit Waker(RawWaker raw) noexcept : raw_(raw) {}
  RawWaker raw_;
};

}  // namespace spool
