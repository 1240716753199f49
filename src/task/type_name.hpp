// Type names for diagnostics: demangled where the ABI can.
#pragma once

#include <string>
#include <typeinfo>

#include "spool/core/backtrace.hpp"

namespace spool::detail {

// `type`'s name as people write it.
std::string type_name(const std::type_info& type);

// A backtrace read under the inspection claim names what each branch waits on with the
// mangled name (BranchAccess::describe: a copy, where demangling would parse and allocate
// more): demangled here, after the task was given back.
void demangle_branches(Backtrace& bt);

}  // namespace spool::detail
