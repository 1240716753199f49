// fatal_misuse: the clear error for misuse found where no exception can be thrown (a
// destructor), and whose continuation would be undefined behaviour.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "spool/config.hpp"

namespace spool::detail {

/// Prints "spool: <what>" to stderr and aborts the process. For misuse detected in a
/// destructor (an object destroyed while others still point into it), where throwing would
/// terminate without the message and going on would corrupt memory.
[[noreturn]] inline void fatal_misuse(const char* what) noexcept {
  std::fprintf(stderr, "spool: %s\n", what);
  std::fflush(stderr);
  std::abort();
}

}  // namespace spool::detail
