// spool::Backtrace: where a chain of Tasks waits, one source location per coroutine.
//
// Every co_await in a Task (or a Generator) records its own place in the awaiting coroutine's
// promise: one store of a pointer to a static record (std::source_location), no allocation.
// A compiler without __builtin_source_location (clang before 15) records nothing: its sites
// read as unknown (empty file, line 0). A chain's backtrace
// walks from the innermost coroutine to the outermost through the promises' continuations,
// reading each one's last await site, so nobody annotates anything. A Task that is a branch
// of a combinator awaited in a Task (when_all, when_any / select), a join's child run by the
// joining task, or a scope's body continues into the coroutine that awaits it, and a chain
// that waits on a combinator or a scope lists its unfinished branches' own chains.
#pragma once

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "spool/config.hpp"

namespace spool {

/// One frame of an async backtrace: where a coroutine awaits (or last awaited).
struct AwaitSite {
  /// The source file of the co_await (empty when unknown).
  const char* file = "";
  /// Its line (0 when unknown).
  std::uint32_t line = 0;
  /// The function the co_await is in, as the compiler names it (g++: its signature).
  const char* function = "";
};

struct BacktraceBranch;

/// An async backtrace: the await sites of a chain of Tasks, innermost first, the way a
/// debugger's stack trace reads. `co_await spool::backtrace()` gives the current chain's.
struct SPOOL_API Backtrace {
  /// The sites, from the innermost coroutine (the one that asked, or that awaits the leaf)
  /// to the outermost.
  std::vector<AwaitSite> frames;
  /// When the chain waits on a combinator (when_all, when_any / select) or a scope: its
  /// unfinished branches (a scope's body), each with its own chain, in argument (or vector)
  /// order. Empty otherwise, and always in what `co_await spool::backtrace()` gives.
  std::vector<BacktraceBranch> branches;
  /// Unfinished branches not in `branches`: past the first 64 of a combinator (a vector of
  /// futures may hold many), or nested deeper than the reader shows (spool-console).
  std::size_t omitted_branches = 0;

  /// The frames as text, one per line: "  at file:line in function", then each branch as a
  /// line "  branch <i>, waiting on <type>:" with its own lines indented under it, then
  /// "  (<n> more branches not listed)" when some were omitted.
  std::string to_string() const;
};

/// One unfinished branch of a combinator that a chain waits on.
struct BacktraceBranch {
  /// Its position among the combinator's futures.
  std::size_t index = 0;
  /// What it waits on: for a Task, the leaf future its chain waits on; for any other future,
  /// the branch's own type (demangled). Empty for a Task that waits on nothing yet.
  std::string waiting_on;
  /// For a Task, its chain: the sites from the coroutine that awaits its leaf up to the
  /// branch Task itself (the enclosing Backtrace's frames continue it), and the branches of
  /// a combinator (or scope) it waits on in turn. For a combinator or a scope, only the
  /// latter.
  Backtrace backtrace;
};

namespace detail {
// What `spool::backtrace()` returns: a request that only a Task's co_await understands.
struct BacktraceRequest {};

// Where a co_await is written, as one pointer: std::source_location where the compiler can
// make one, else a stand-in of the same size that knows nothing (so that code built by
// either compiler agrees on a promise's layout).
#if defined(__cpp_lib_source_location)
using SourceSite = std::source_location;
inline AwaitSite to_await_site(const SourceSite& s) noexcept {
  return AwaitSite{s.file_name(), s.line(), s.function_name()};
}
#else
struct SourceSite {
  static constexpr SourceSite current() noexcept { return {}; }
  const void* unknown = nullptr;
};
inline AwaitSite to_await_site(const SourceSite&) noexcept { return AwaitSite{}; }
#endif
static_assert(sizeof(SourceSite) == sizeof(void*));

// A SourceSite left unconstructed until the first co_await writes one: the coroutine's
// creation stays as cheap as it was.
union LazySite {
  LazySite() noexcept {}
  SourceSite site;
};
}  // namespace detail

/// Inside a Task: `Backtrace bt = co_await spool::backtrace();` gives the chain of co_await
/// sites that leads to this line (this co_await first, then the one that awaits this Task,
/// and so on up to the outermost Task). Costs nothing until asked: the sites are recorded by
/// every co_await anyway. Awaiting it never suspends.
inline detail::BacktraceRequest backtrace() noexcept { return {}; }

}  // namespace spool
