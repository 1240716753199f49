// Park: the one interface through which the schedulers park a thread.
#pragma once

#include "spool/core/reactor_hook.hpp"

namespace spool::detail {

// The public ReactorHook contract, so the scheduler never knows what it parks in (as Asio's
// `scheduler_task`). Each driver layer (time → I/O → thread parker) wraps the one below.
// unpark() is sticky and never waits for the thread in the driver (at most for io_uring's lock,
// held across one system call). Unlike a user's hook, a layer's park is called only by the
// thread in the driver (the driver lock).
using Park = ReactorHook;

}  // namespace spool::detail
