// The heavy side of spool's asymmetric fences (spool/detail/atomic.hpp): Linux's membarrier
// with its private expedited command, which runs a full barrier on each CPU that is running
// a thread of this process (a thread not running passes a barrier when it is switched in).
#include <unistd.h>

#include "spool/detail/atomic.hpp"
#include "spool/detail/fatal_misuse.hpp"

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif

namespace spool::detail {

#if defined(__linux__) && defined(SYS_membarrier)

bool enable_asymmetric_fences() noexcept {
  const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  // Asking again (one runtime after another) is harmless.
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

void asymmetric_fence_heavy() noexcept {
  if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
    // After a successful registration the command cannot fail; going on without the
    // barrier would break the protocol that relies on it.
    fatal_misuse("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after registration");
  }
}

#else

bool enable_asymmetric_fences() noexcept { return false; }
void asymmetric_fence_heavy() noexcept {
  fatal_misuse("asymmetric_fence_heavy without enable_asymmetric_fences");
}

#endif

}  // namespace spool::detail
