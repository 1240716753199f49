#include "spool/core/backtrace.hpp"

#include <cxxabi.h>

#include <cstdlib>

#include "task/type_name.hpp"

namespace spool {

namespace {

// `bt` as Backtrace::to_string writes it, each line after `indent` more spaces.
void write(const Backtrace& bt, std::size_t indent, std::string& out) {
  const std::string pad(indent + 2, ' ');
  for (const AwaitSite& f : bt.frames) {
    out += pad + "at ";
    out += f.file;
    out += ':';
    out += std::to_string(f.line);
    out += " in ";
    out += f.function;
    out += '\n';
  }
  for (const BacktraceBranch& b : bt.branches) {
    out += pad + "branch " + std::to_string(b.index);
    if (!b.waiting_on.empty()) out += ", waiting on " + b.waiting_on;
    out += ":\n";
    write(b.backtrace, indent + 2, out);
  }
}

}  // namespace

std::string Backtrace::to_string() const {
  std::string out;
  write(*this, 0, out);
  return out;
}

namespace detail {

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

}  // namespace detail

}  // namespace spool
