// spool::Context: what a poll receives — the task's Waker and the reactor-hook slot.
#pragma once

#include <memory>
#include <stdexcept>

#include "spool/core/reactor_hook.hpp"
#include "spool/core/waker.hpp"

namespace spool {

/// Thrown by Context::install_reactor_or_throw when the context cannot park in the reactor.
class ReactorConflict : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// The reactor-hook slot of one executor thread: empty, or holding the one reactor that
/// the thread parks in. Owned by the executor; only its thread touches it (during polls).
/// An executor that offers a slot must honour it: while a future that installed a hook
/// waits, the executor parks in it (or sees to it that the hook is driven); an executor that
/// cannot offers no slot.
class ReactorSlot {
 public:
  /// Installs `hook` if the slot is empty. Returns true if `hook` is (now) the installed
  /// reactor, false if a different one already is.
  bool install(const std::shared_ptr<ReactorHook>& hook) {
    if (!hook_) {
      hook_ = hook;
      return true;
    }
    return hook_ == hook;
  }
  /// The installed reactor, or nullptr.
  const std::shared_ptr<ReactorHook>& hook() const noexcept { return hook_; }

 private:
  std::shared_ptr<ReactorHook> hook_;
};

/// Passed to every `poll`. Carries the Waker to wake when the polled future can make
/// progress, and the executor's reactor-hook slot. A Context lives on the executor's stack
/// for the duration of one poll: store a clone of `waker()`, never the Context.
class Context {
 public:
  /// A context with `waker` and no reactor slot (an executor that cannot park in a reactor).
  explicit Context(const Waker& waker) noexcept : waker_(&waker), slot_(nullptr) {}
  /// A context with `waker` whose reactor slot is `slot` (may be null).
  Context(const Waker& waker, ReactorSlot* slot) noexcept : waker_(&waker), slot_(slot) {}
  /// A nested context: a combinator's own `waker`, sharing `parent`'s reactor slot, so that
  /// a hook installed through either context is seen through both.
  Context(const Waker& waker, const Context& parent) noexcept
      : waker_(&waker), slot_(parent.slot_) {}
  // A Context keeps a pointer to its Waker: a temporary Waker (`Context cx(Waker::noop());`)
  // would be gone by the first poll. Name the Waker first.
  explicit Context(Waker&&) = delete;
  Context(Waker&&, ReactorSlot*) = delete;
  Context(Waker&&, const Context&) = delete;

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  /// The waker of the task being polled. Clone it (or register it in an AtomicWaker) to be
  /// woken later; every poll may bring a different one, so a pending leaf stores the latest.
  const Waker& waker() const noexcept { return *waker_; }

  /// Asks the executor to park in `hook` while this task waits. Returns true if `hook` is
  /// installed (now or already), false if the executor has no reactor slot or a different
  /// reactor is installed — the future must then arrange its wake-ups another way (for
  /// spool's drivers: a background driver thread).
  bool install_reactor(const std::shared_ptr<ReactorHook>& hook) {
    return slot_ != nullptr && slot_->install(hook);
  }

  /// As install_reactor, for futures that have no fallback: throws ReactorConflict with an
  /// explanation when the reactor cannot be installed.
  void install_reactor_or_throw(const std::shared_ptr<ReactorHook>& hook) {
    if (slot_ == nullptr) {
      throw ReactorConflict(
          "spool: this executor provides no reactor-hook slot, so it cannot park in the "
          "future's reactor; drive the future with spool::block_on or a spool runtime, or "
          "give the future a fallback (a background driver thread)");
    }
    if (!slot_->install(hook)) {
      throw ReactorConflict(
          "spool: a different reactor hook is already installed for this executor thread (on "
          "a spool runtime: the runtime's own driver); one thread can park in only one "
          "reactor, so a future that needs another reactor must fall back to driving it on a "
          "background thread, or be run with spool::block_on");
    }
  }

  /// The reactor installed for this executor thread, or nullptr.
  ReactorHook* reactor() const noexcept { return slot_ ? slot_->hook().get() : nullptr; }

  /// The executor's reactor slot (null when it has none), for nested contexts.
  ReactorSlot* reactor_slot() const noexcept { return slot_; }

 private:
  const Waker* waker_;
  ReactorSlot* slot_;
};

}  // namespace spool
