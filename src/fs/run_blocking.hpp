// run_blocking: how an fs operation reaches the blocking pool, counted in the metrics.
#pragma once

#include <cerrno>
#include <optional>
#include <type_traits>
#include <utility>

#include "context/current.hpp"
#include "runtime/off_thread.hpp"
#include "runtime/shared.hpp"

namespace spool::detail::fs_ops {

// Runs `fn()` on the current runtime's blocking pool (counted in fs_blocking_ops), or outside
// every runtime on a thread of its own (off_thread). `fn` owns what it uses, and is destroyed
// right after its call, before the result is sent: on both paths, what it held (a File's
// FsFileUse) is let go once its system calls are over and before the caller can go on (a
// close awaited next must find the call over: fs_state.hpp).
template <class Fn>
Task<std::invoke_result_t<Fn&>> run_blocking(Fn fn) {
  return off_thread([job = std::optional<Fn>(std::move(fn))]() mutable {
    // On a pool thread the runtime is current (off_thread spawned there, if anywhere).
    if (RuntimeShared* rt = current_runtime_ptr()) rt->count_fs_blocking_op();
    auto result = (*job)();
    job.reset();
    return result;
  });
}

// A system call's result as the operations give it: `r`, or -errno when it failed.
inline long sys(long r) noexcept { return r < 0 ? -errno : r; }

}  // namespace spool::detail::fs_ops
