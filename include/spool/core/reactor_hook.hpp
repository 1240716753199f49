// spool::ReactorHook: how a future tells the thread driving it which blocking call wakes it.
#pragma once

#include <chrono>
#include <optional>

#include "spool/config.hpp"

namespace spool {

/// A reactor that an executor thread can park in. A leaf future whose wake-ups come from a
/// reactor (an epoll set, an io_uring, a timerfd) installs that reactor in its Context; the
/// executor then blocks in `park` instead of a plain thread park, so the same thread both
/// waits for and dispatches the events. Implementations must honour:
///  - park(timeout) blocks until an event was dispatched (firing wakers), `unpark` was
///    called, or `timeout` elapsed (nullopt: no limit). Spurious returns are allowed.
///  - unpark() is thread-safe and never blocks; an unpark that comes before a park makes
///    that park return at once (the token is sticky, as an eventfd is).
/// Only a thread whose executor has the hook installed calls park.
///
/// A shared reactor — one hook installed in several executor threads' slots at once, as a
/// spool runtime's driver is in every worker's slot and in every block_on slot that polled
/// one of its timers — must tolerate park from several threads. spool's driver does it the
/// way tokio's does: one thread at a time holds it (a try-lock) and parks in it, with the
/// next timer's deadline as timeout; a thread that finds it held parks on its own parker
/// instead (a runtime worker), or waits for the driver (any other executor: until an unpark,
/// its timeout, or the driver's release, and then tries to take it). An installed hook thus
/// means "this executor sees to it that the reactor is driven while the future waits",
/// not "this very thread parks in it". Such a shared hook's unpark may wake every thread
/// parked or waiting in it (a spurious return for all but one), never none.
class SPOOL_API ReactorHook {
 public:
  /// Blocks the calling thread until an event, an unpark, or `timeout`.
  virtual void park(std::optional<std::chrono::nanoseconds> timeout) = 0;
  /// Makes the current or the next park return. Thread-safe, never blocks.
  virtual void unpark() noexcept = 0;
  virtual ~ReactorHook() = default;
};

}  // namespace spool
