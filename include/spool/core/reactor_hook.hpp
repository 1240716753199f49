// spool::ReactorHook: how a future tells the thread driving it which blocking call wakes it.
#pragma once

#include <chrono>
#include <optional>

namespace spool {

/// A reactor that an executor thread can park in. A leaf future whose wake-ups come from a
/// reactor (an epoll set, an io_uring, a timerfd) installs that reactor in its Context; the
/// executor then blocks in `park` instead of a plain thread park, so the same thread both
/// waits for and dispatches the events. Implementations must honour:
///  - park(timeout) blocks until an event was dispatched (firing wakers), `unpark` was
///    called, or `timeout` elapsed (nullopt: no limit). Spurious returns are allowed.
///  - unpark() is thread-safe and never blocks; an unpark that comes before a park makes
///    that park return at once (the token is sticky, as an eventfd is).
/// Only the thread that installed the hook calls park.
class ReactorHook {
 public:
  /// Blocks the calling thread until an event, an unpark, or `timeout`.
  virtual void park(std::optional<std::chrono::nanoseconds> timeout) = 0;
  /// Makes the current or the next park return. Thread-safe, never blocks.
  virtual void unpark() noexcept = 0;
  virtual ~ReactorHook() = default;
};

}  // namespace spool
