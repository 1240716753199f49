// Misuses that must not compile, each with a short error that says what to write instead
// (tests/CMakeLists.txt runs check.cmake on each SPOOL_CASE_*). SPOOL_FIXED gives the
// correct form of the same line, which must compile.
#include "spool/combinators/when_all.hpp"
#include "spool/combinators/when_any.hpp"
#include "spool/core/poll_fn.hpp"
#include "spool/core/task.hpp"
#include "spool/fork.hpp"
#include "spool/stream/generator.hpp"

#include <utility>
#include <vector>

#ifdef SPOOL_FIXED
#define SPOOL_NAMED(f) std::move(f)
#else
#define SPOOL_NAMED(f) f
#endif

spool::Task<int> one() { co_return 1; }

// Futures (or a vector of them) named first, as docs/core.md advises under g++ 12, then passed
// without std::move.
spool::Task<void> named_futures() {
  auto a = one();
  auto b = one();
#if defined(SPOOL_CASE_POLL_VOID_BRACES) || defined(SPOOL_CASE_GENERATOR_NEXT_TEMPORARY) || \
    defined(SPOOL_CASE_FLUSH_DISCARDED) || defined(SPOOL_CASE_CONST_GENERATOR_NEXT) ||      \
    defined(SPOOL_CASE_FRAMED_FILE) || defined(SPOOL_CASE_NAMED_LOCAL_ARRAY)
  co_return;  // not these cases
#elif defined(SPOOL_CASE_SELECT)
  (void)co_await spool::select(SPOOL_NAMED(a), SPOOL_NAMED(b));
#elif defined(SPOOL_CASE_WHEN_ANY)
  (void)co_await spool::when_any(SPOOL_NAMED(a), SPOOL_NAMED(b));
#elif defined(SPOOL_CASE_WHEN_ALL)
  (void)co_await spool::when_all(SPOOL_NAMED(a), SPOOL_NAMED(b));
#elif defined(SPOOL_CASE_JOIN)
  (void)co_await spool::join(SPOOL_NAMED(a), SPOOL_NAMED(b));
#else
  std::vector<spool::Task<int> > v;
  v.push_back(std::move(a));
  v.push_back(std::move(b));
#if defined(SPOOL_CASE_WHEN_ALL_VECTOR)
  (void)co_await spool::when_all(SPOOL_NAMED(v));
#elif defined(SPOOL_CASE_WHEN_ANY_VECTOR)
  (void)co_await spool::when_any(SPOOL_NAMED(v));
#elif defined(SPOOL_CASE_JOIN_ALL_VECTOR)
  (void)co_await spool::join_all(SPOOL_NAMED(v));
#endif
#endif
}

// `return {};` from a Poll<void> poll_fn would read as "done" and used to mean pending.
#if defined(SPOOL_CASE_POLL_VOID_BRACES) && defined(SPOOL_FIXED)
auto not_yet = spool::poll_fn([](spool::Context&) -> spool::Poll<void> { return spool::pending; });
#elif defined(SPOOL_CASE_POLL_VOID_BRACES)
auto not_yet = spool::poll_fn([](spool::Context&) -> spool::Poll<void> { return {}; });
#endif

// A generator's next() on a temporary generator would dangle; a const next() cannot be awaited.
#if defined(SPOOL_CASE_GENERATOR_NEXT_TEMPORARY) || defined(SPOOL_CASE_CONST_GENERATOR_NEXT)
spool::Generator<int> numbers() { co_yield 1; }

spool::Task<void> generator_misuse() {
  auto gen = numbers();
#if defined(SPOOL_CASE_GENERATOR_NEXT_TEMPORARY) && defined(SPOOL_FIXED)
  auto n = gen.next();
#elif defined(SPOOL_CASE_GENERATOR_NEXT_TEMPORARY)
  auto n = numbers().next();
#elif defined(SPOOL_FIXED)
  auto n = gen.next();
#else
  const auto n = gen.next();
#endif
  (void)co_await n;
}
#endif

// A framed writer's send() only encodes: its Flush must be awaited to write.
#if defined(SPOOL_CASE_FLUSH_DISCARDED)
#include <cstddef>
#include <span>

#include "spool/codec.hpp"

#pragma GCC diagnostic error "-Wunused-result"  // an error without SPOOL_WERROR too

struct SinkBytes {
  auto write(std::span<const char> buf) {
    return spool::poll_fn(
        [n = buf.size()](spool::Context&) { return spool::Poll<std::size_t>::ready(n); });
  }
};

spool::Task<void> send_misuse(spool::codec::FramedWrite<SinkBytes, spool::codec::LinesCodec>& f) {
#if defined(SPOOL_FIXED)
  co_await f.send("x");
#else
  f.send("x");
  co_return;
#endif
}
#endif

// A framed reader over a file: its dropped pending read would still complete on the pool.
#if defined(SPOOL_CASE_FRAMED_FILE)
#include "spool/codec.hpp"
#include "spool/fs.hpp"
#include "spool/net.hpp"

#if defined(SPOOL_FIXED)
using Bytes = spool::net::TcpStream;
#else
using Bytes = spool::fs::File;
#endif
void frame_a_file(Bytes bytes) {
  spool::codec::FramedRead lines(std::move(bytes), spool::codec::LinesCodec());
  (void)lines;
}
#endif

// A task named with a local char array, which would not outlive the task: refused (a literal
// is kept as a pointer; any other string must be a std::string, which the task copies).
#if defined(SPOOL_CASE_NAMED_LOCAL_ARRAY)
#include <string>

#include "spool/task_meta.hpp"

void name_misuse() {
  char buffer[8] = "conn";
#if defined(SPOOL_FIXED)
  auto n = spool::named(std::string(buffer), one());
#else
  auto n = spool::named(buffer, one());
#endif
  (void)n;
}
#endif
