#include "spool/core/backtrace.hpp"

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
  if (bt.omitted_branches != 0) {
    out += pad + "(" + std::to_string(bt.omitted_branches) + " more branches not listed)\n";
  }
}

}  // namespace

std::string Backtrace::to_string() const {
  std::string out;
  write(*this, 0, out);
  return out;
}

}  // namespace spool
