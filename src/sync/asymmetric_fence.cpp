// The heavy side of spool's asymmetric fences (spool/detail/atomic.hpp): Linux's membarrier
// with its private expedited command, which runs a full barrier on each CPU that is running
// a thread of this process (a thread not running passes a barrier when it is switched in).
#include <unistd.h>

#include "spool/detail/atomic.hpp"

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

namespace spool::detail {

#if defined(__linux__) && defined(SYS_membarrier)

namespace {
bool register_for_membarrier() noexcept {
  const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}
}  // namespace

bool enable_asymmetric_fences() noexcept {
  // A registration lasts as long as the process (a fork's child inherits it), so one is
  // enough; the function-local static serialises the runtimes built at once.
  static const bool registered = register_for_membarrier();
  return registered;
}

bool asymmetric_fence_heavy() noexcept {
  // Registered, the command fails only when the kernel has no memory for its CPU mask.
  return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
}

#else

bool enable_asymmetric_fences() noexcept { return false; }
bool asymmetric_fence_heavy() noexcept { return false; }

#endif

}  // namespace spool::detail
