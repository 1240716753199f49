// open_child_pidfd: pidfd_open, then a check that the pidfd is our child's.
#include "process/pidfd.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace spool::detail {

int open_child_pidfd(pid_t pid) noexcept {
  // PIDFD_NONBLOCK (O_NONBLOCK) is Linux 5.10's: before, it is set afterwards.
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, O_NONBLOCK));
  if (fd < 0 && errno == EINVAL) {
    fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) (void)::fcntl(fd, F_SETFL, O_NONBLOCK);
  }
  if (fd < 0) return -1;
  // Had something else reaped the child, the kernel may have given its number to another
  // process, which the pidfd would then name: waitid on it says ECHILD, as it is not our
  // child. WNOWAIT reaps nothing; WNOHANG does not wait for a running child.
  siginfo_t info{};
  int rc = 0;
  while ((rc = ::waitid(P_PIDFD, static_cast<id_t>(fd), &info, WEXITED | WNOHANG | WNOWAIT)) != 0 &&
         errno == EINTR) {
  }
  if (rc != 0 && errno != EINVAL) {  // (EINVAL: Linux 5.3, without P_PIDFD: unchecked)
    const int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

}  // namespace spool::detail
