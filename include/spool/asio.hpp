// spool::asio: the Boost.Asio bridge (link spool::asio; docs/asio.md). Not in spool.hpp.
#pragma once

#include "spool/config.hpp"  // first: it refuses -fno-exceptions builds before Boost is looked for

#include "spool/asio/async_await.hpp"
#include "spool/asio/drive.hpp"
#include "spool/asio/errors.hpp"
#include "spool/asio/executor.hpp"
#include "spool/asio/use_task.hpp"

/// \namespace spool::asio
/// The Boost.Asio bridge: the use_task completion token, drive and run, the RuntimeExecutor
/// and async_await (docs/asio.md).
