// open_child_pidfd: a pidfd of one of this process's children, checked to be that child.
#pragma once

#include <sys/types.h>

namespace spool::detail {

// A pidfd (non-blocking, close-on-exec) of `pid`, this process's child, not yet reaped; -1
// with errno set otherwise. ECHILD or ESRCH: `pid` is no child of ours any more — something
// else reaped it (a SIGCHLD handler's waitpid(-1), SIGCHLD ignored) and the number may be
// another process's, so a pidfd of it is not kept. Any other errno (ENOSYS before Linux 5.3,
// EPERM under a seccomp filter, EMFILE): no pidfd can be had. On Linux 5.3, which has no
// waitid(P_PIDFD), the pidfd is not checked.
int open_child_pidfd(pid_t pid) noexcept;

}  // namespace spool::detail
