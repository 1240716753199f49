// spool: a C++20 async runtime. This header includes the whole public surface.
#pragma once

#include "spool/block_on.hpp"
#include "spool/builder.hpp"
#include "spool/codec.hpp"
#include "spool/combinators/branch_output.hpp"
#include "spool/combinators/when_all.hpp"
#include "spool/combinators/when_any.hpp"
#include "spool/coop.hpp"
#include "spool/core/atomic_waker.hpp"
#include "spool/core/backtrace.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/poll_fn.hpp"
#include "spool/core/reactor_hook.hpp"
#include "spool/core/task.hpp"
#include "spool/core/waker.hpp"
#include "spool/core/yield.hpp"
#include "spool/fork.hpp"
#include "spool/from_callback.hpp"
#include "spool/fs.hpp"
#include "spool/io.hpp"
#include "spool/io_backend.hpp"
#include "spool/join_handle.hpp"
#include "spool/join_set.hpp"
#include "spool/levels.hpp"
#include "spool/metrics.hpp"
#include "spool/net.hpp"
#include "spool/process.hpp"
#include "spool/runtime.hpp"
#include "spool/scope.hpp"
#include "spool/signal.hpp"
#include "spool/std_future.hpp"
#include "spool/stream.hpp"
#include "spool/sync/barrier.hpp"
#include "spool/sync/broadcast.hpp"
#include "spool/sync/cancellation_token.hpp"
#include "spool/sync/mpsc.hpp"
#include "spool/sync/mutex.hpp"
#include "spool/sync/notify.hpp"
#include "spool/sync/once_cell.hpp"
#include "spool/sync/oneshot.hpp"
#include "spool/sync/rwlock.hpp"
#include "spool/sync/semaphore.hpp"
#include "spool/sync/send_result.hpp"
#include "spool/sync/watch.hpp"
#include "spool/task_local.hpp"
#include "spool/task_meta.hpp"
#include "spool/task_tracker.hpp"
#include "spool/time.hpp"
#include "spool/version.hpp"

/// \namespace spool
/// spool's public API: futures and wakers, Task, the runtime, timers, sync primitives,
/// combinators, streams. Names in spool::detail are internals (docs/compatibility.md).
/// \namespace spool::net
/// Sockets (TCP, UDP, Unix), addresses, name lookup, buffered readers and writers (docs/io.md).
/// \namespace spool::io
/// The process's standard streams (docs/process.md).
/// \namespace spool::fs
/// Files and directories, after tokio::fs (docs/fs.md).
/// \namespace spool::process
/// Child processes: Command, Child, ExitStatus (docs/process.md).
/// \namespace spool::time
/// The runtime's clock, and the paused clock of tests (docs/time.md).
/// \namespace spool::stream
/// Stream adapters and BroadcastStream (docs/streams.md).
/// \namespace spool::oneshot
/// The one-value channel (docs/sync.md).
/// \namespace spool::mpsc
/// The multi-producer, single-consumer channel (docs/sync.md).
/// \namespace spool::broadcast
/// The channel whose every receiver gets every value (docs/sync.md).
/// \namespace spool::watch
/// The channel that keeps only the latest value (docs/sync.md).
