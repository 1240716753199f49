// Built by scripts/check-install against an installed spool: exits 0 when the installed
// headers and library work.
#include <cstdio>

#include "spool/spool.hpp"

namespace {

spool::Task<int> answer() { co_return 42; }

spool::Task<int> doubled() { co_return 2 * co_await answer(); }

}  // namespace

int main() {
  const int result = spool::block_on(doubled());
  if (result != 84) {
    std::fprintf(stderr, "consumer: expected 84, got %d\n", result);
    return 1;
  }
  std::puts("consumer: spool::block_on(doubled()) == 84");
  return 0;
}
