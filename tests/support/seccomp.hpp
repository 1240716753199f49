// Seccomp filters for death tests: one system call made to fail, as a container's profile
// (or an older kernel) does, or system calls that must not be made at all. A filter covers
// the calling thread and the threads and processes it starts later, for good.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>

#include <initializer_list>
#include <vector>

namespace spool_test {

/// Makes each of the system calls `nrs` end in `action` (a SECCOMP_RET_ value) from now on;
/// false if the filter could not be installed.
inline bool filter_syscalls(std::initializer_list<unsigned> nrs, unsigned action) {
  // [load nr] [nr == nrs[i]: to the action]... [allow] [action]
  std::vector<sock_filter> filter{BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr))};
  auto to_action = static_cast<unsigned char>(nrs.size());
  for (const unsigned nr : nrs)
    filter.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, to_action--, 0));
  filter.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  filter.push_back(BPF_STMT(BPF_RET | BPF_K, action));
  sock_fprog prog{static_cast<unsigned short>(filter.size()), filter.data()};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

/// Makes system call `nr` fail with `err`.
inline bool refuse_syscall(unsigned nr, int err) {
  return filter_syscalls({nr}, SECCOMP_RET_ERRNO | (static_cast<unsigned>(err) & SECCOMP_RET_DATA));
}

/// Kills the process (SIGSYS) at the first of the system calls `nrs`.
inline bool kill_on_syscalls(std::initializer_list<unsigned> nrs) {
  return filter_syscalls(nrs, SECCOMP_RET_KILL_PROCESS);
}

}  // namespace spool_test
