// spool: a C++20 async runtime. This header includes the whole public surface.
#pragma once

#include "spool/block_on.hpp"
#include "spool/coop.hpp"
#include "spool/core/atomic_waker.hpp"
#include "spool/core/context.hpp"
#include "spool/core/future.hpp"
#include "spool/core/poll.hpp"
#include "spool/core/reactor_hook.hpp"
#include "spool/core/task.hpp"
#include "spool/core/waker.hpp"
#include "spool/join_handle.hpp"
#include "spool/metrics.hpp"
#include "spool/runtime.hpp"
#include "spool/sync/oneshot.hpp"
#include "spool/time.hpp"
