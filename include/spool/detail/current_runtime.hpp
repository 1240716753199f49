// current_runtime_ptr(), declared once: for the public spawn path (spool/runtime.hpp) and for
// src/context/current.cpp, which defines it and so exports it (SPOOL_API) from libspool.so.
#pragma once

#include "spool/config.hpp"

namespace spool::detail {

class RuntimeShared;

/// The runtime the calling thread is in (a worker, a blocking thread, or a thread inside its
/// block_on), or null, without taking a reference: valid while the thread stays in it.
SPOOL_API RuntimeShared* current_runtime_ptr() noexcept;

}  // namespace spool::detail
