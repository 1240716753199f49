// CountingWaker: a Waker built with Waker::from_raw whose vtable counts what it is asked to do.
#pragma once

#include <atomic>
#include <functional>
#include <utility>

#include "spool/core/waker.hpp"

namespace spool_test {

// What the vtable of one CountingWaker was asked to do, summed over every handle to it.
// Atomic: the handles may be cloned, woken and dropped on any thread.
struct WakerCounts {
  std::atomic<int> clones{0};        // vtable clone (a new handle)
  std::atomic<int> drops{0};         // vtable drop (a handle released without waking)
  std::atomic<int> wakes{0};         // vtable wake (wake a handle and release it)
  std::atomic<int> wakes_by_ref{0};  // vtable wake_by_ref (the handle stays)

  int total_wakes() const { return wakes.load() + wakes_by_ref.load(); }
  // Handles made by clone (CountingWaker::waker() included) that are still alive.
  int live() const { return clones.load() - drops.load() - wakes.load(); }
};

// Owns a reference-counted node that its Wakers point at. Every handle the test sees comes
// from a counted clone, so once they are all gone `counts().live() == 0`, i.e.
// clones == drops + wakes. The node is freed by its last reference: a handle that is never
// dropped leaks it (LeakSanitizer reports it) and a handle dropped twice frees it twice
// (AddressSanitizer reports it). Handles of one CountingWaker share the data pointer, so
// they are will_wake-equal; handles of two CountingWakers are not.
class CountingWaker {
 public:
  CountingWaker() : node_(new Node) {}
  ~CountingWaker() { release(node_); }
  CountingWaker(const CountingWaker&) = delete;
  CountingWaker& operator=(const CountingWaker&) = delete;

  // A new handle (counted as one clone).
  spool::Waker waker() const { return spool::Waker::from_raw(clone(node_)); }
  const WakerCounts& counts() const { return node_->counts; }

  // Runs `f` at the start of every later clone, on the cloning thread (e.g. to hold a
  // thread inside AtomicWaker::register_waker). Set it before the handles are shared.
  void set_on_clone(std::function<void()> f) { node_->on_clone = std::move(f); }

 private:
  struct Node {
    WakerCounts counts;
    std::atomic<int> refs{1};  // the CountingWaker's own reference + one per live handle
    std::function<void()> on_clone;
  };

  static Node* node(const void* p) { return static_cast<Node*>(const_cast<void*>(p)); }
  static void release(Node* n) {
    // acq_rel: the last releaser, which deletes the node, sees every other holder's writes.
    if (n->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete n;
  }

  static spool::RawWaker clone(const void* p) {
    Node* n = node(p);
    if (n->on_clone) n->on_clone();
    n->refs.fetch_add(1, std::memory_order_relaxed);
    n->counts.clones.fetch_add(1);
    return spool::RawWaker{n, &kVTable};
  }
  static void wake(const void* p) {
    node(p)->counts.wakes.fetch_add(1);
    release(node(p));
  }
  static void wake_by_ref(const void* p) { node(p)->counts.wakes_by_ref.fetch_add(1); }
  static void drop(const void* p) {
    node(p)->counts.drops.fetch_add(1);
    release(node(p));
  }
  static constexpr spool::WakerVTable kVTable{&clone, &wake, &wake_by_ref, &drop};

  Node* node_;
};

}  // namespace spool_test
