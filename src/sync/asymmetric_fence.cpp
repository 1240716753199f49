// The heavy side of spool's asymmetric fences (spool/detail/atomic.hpp): Linux's membarrier
// with its private expedited command, which runs a full barrier on each CPU that is running
// a thread of this process (a thread not running passes a barrier when it is switched in).
#include <unistd.h>

#include <cerrno>

#include "spool/detail/atomic.hpp"
#include "spool/detail/fatal_misuse.hpp"

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
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0) return true;
  // Registered, the command fails only when the kernel has no memory for its CPU mask; any
  // other error means the caller never had enable_asymmetric_fences() say yes.
  if (errno == ENOMEM) return false;
  fatal_misuse("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed other than for memory");
}

#else

bool enable_asymmetric_fences() noexcept { return false; }
bool asymmetric_fence_heavy() noexcept {
  fatal_misuse("asymmetric_fence_heavy without enable_asymmetric_fences");
}

#endif

}  // namespace spool::detail
