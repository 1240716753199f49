#include "spool/core/backtrace.hpp"

namespace spool {

std::string Backtrace::to_string() const {
  std::string out;
  for (const AwaitSite& f : frames) {
    out += "  at ";
    out += f.file;
    out += ':';
    out += std::to_string(f.line);
    out += " in ";
    out += f.function;
    out += '\n';
  }
  return out;
}

}  // namespace spool
