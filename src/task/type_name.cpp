#include "task/type_name.hpp"

#include <cxxabi.h>

#include <cstdlib>

namespace spool::detail {

namespace {

// `mangled` as people write it, or as it is where it cannot be demangled.
std::string demangled(const char* mangled) {
  int status = 0;
  char* name = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && name ? name : mangled;
  std::free(name);
  return out;
}

}  // namespace

std::string type_name(const std::type_info& type) { return demangled(type.name()); }

void demangle_branches(Backtrace& bt) {
  for (BacktraceBranch& b : bt.branches) {
    if (!b.waiting_on.empty()) b.waiting_on = demangled(b.waiting_on.c_str());
    demangle_branches(b.backtrace);
  }
}

}  // namespace spool::detail
