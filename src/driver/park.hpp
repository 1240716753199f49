// Park: the one interface through which the schedulers park a thread.
#pragma once

#include "spool/core/reactor_hook.hpp"

namespace spool::detail {

// A scheduler parks only through this interface, so it never knows what it parks in (as
// Asio's scheduler sees its reactor only as a `scheduler_task`). Each layer of the driver
// stack is one — time driver → I/O driver → thread parker — and wraps the layer below:
// park(timeout) blocks until an event was dispatched (wakers fired), unpark() was called,
// or the timeout elapsed; unpark() is thread-safe, never waits for the holder (it may take
// a lock held only across a system call: the io_uring driver's), and is sticky (it makes
// the next park return at once when nobody is parked). Spurious returns are allowed.
//
// It is the public ReactorHook contract itself: the runtime's driver stack is what the
// workers install in their reactor slots, and a future may install it in any executor's
// slot (driver/driver.hpp). Unlike a ReactorHook handed to users, a layer's park may be
// called only by the thread that holds its driver (driver/driver.hpp's try-lock).
using Park = ReactorHook;

}  // namespace spool::detail
