// W11 fork_fib, W12 fork_skynet, W13 fork_nqueens: the fork-join workloads of
// tzcnt/runtime-benchmarks at 2-core sizes, in the same shape as the tokio and TBB peers,
// each written twice:
//  - fork_fib, fork_skynet, fork_nqueens: on spool's structured fork path, spool::join /
//    join_all (include/spool/fork.hpp);
//  - fork_fib_spawn, fork_skynet_spawn, fork_nqueens_spawn: a fork is spool::spawn of the
//    child's Task, a join is co_await of its JoinHandle.
// The root of each tree is the Runtime::block_on future (not spawned). Op = one spawned (or
// forked) task; the number per repetition is computed once from the same recursion
// (3,524,577 / 1,111,110 / 856,188). Every repetition's result is checked.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "spool/fork.hpp"
#include "spool/runtime.hpp"

namespace spool_bench {

namespace {

// --- W11 fork_fib ---

constexpr int kFibN = 32;
constexpr std::uint64_t kFibExpected = 2'178'309;

spool::Task<std::uint64_t> fib_spawn(int n) {
  if (n < 2) co_return static_cast<std::uint64_t>(n);
  auto x = spool::spawn(fib_spawn(n - 1));      // fork
  std::uint64_t y = co_await fib_spawn(n - 2);  // the inline leg, in this task
  co_return co_await x + y;                     // join
}

// The join runs its first child here and offers the second (fib(n - 1)) for stealing.
spool::Task<std::uint64_t> fib(int n) {
  if (n < 2) co_return static_cast<std::uint64_t>(n);
  auto [y, x] = co_await spool::join(fib(n - 2), fib(n - 1));
  co_return x + y;
}

// Tasks spawned by fib(n): one per call with n >= 2 (= fib(n+1) - 1).
std::size_t fib_spawn_count(int n) {
  std::size_t a = 0, b = 0;  // s(k-2), s(k-1); s(n) = 0 for n < 2, else 1 + s(n-1) + s(n-2)
  for (int k = 2; k <= n; ++k) {
    const std::size_t s = 1 + b + a;
    a = b;
    b = s;
  }
  return b;
}

template <spool::Task<std::uint64_t> (*Fib)(int)>
void run_fork_fib(const Config& cfg, const char* name) {
  spool::Runtime rt = make_runtime(cfg);
  const std::size_t spawned = fib_spawn_count(kFibN);
  auto samples = measure(cfg, [&] {
    const auto t0 = Clock::now();
    const std::uint64_t v = rt.block_on(Fib(kFibN));
    const auto dt = Clock::now() - t0;
    check(v == kFibExpected, std::string(name) + ": wrong result " + std::to_string(v) +
                                 " (expected " + std::to_string(kFibExpected) + ")");
    return dt;
  });
  report_ns_per_op(name, samples, spawned);
}
void w11_fork_fib(const Config& cfg) { run_fork_fib<fib>(cfg, "fork_fib"); }
void w11_fork_fib_spawn(const Config& cfg) { run_fork_fib<fib_spawn>(cfg, "fork_fib_spawn"); }

// --- W12 fork_skynet ---

constexpr int kSkynetDepth = 6;
constexpr std::uint64_t kSkynetExpected = 499'999'500'000;

// The node covering leaves num .. num + size - 1.
spool::Task<std::uint64_t> skynet_spawn(std::uint64_t num, std::uint64_t size) {
  if (size == 1) co_return num;
  size /= 10;
  auto children = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::array{spool::spawn(skynet_spawn(num + I * size, size))...};  // in order
  }
  (std::make_index_sequence<10>{});
  std::uint64_t sum = 0;
  for (auto& c : children) sum += co_await c;
  co_return sum;
}

spool::Task<std::uint64_t> skynet(std::uint64_t num, std::uint64_t size) {
  if (size == 1) co_return num;
  size /= 10;
  // One join of the 10 children (a tuple: nothing allocated beyond their frames), awaited
  // in place.
  auto children = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return spool::join(skynet(num + I * size, size)...);
  }
  (std::make_index_sequence<10>{});
  const auto values = co_await children;
  co_return std::apply([](auto... v) { return (v + ...); }, values);
}

template <spool::Task<std::uint64_t> (*Skynet)(std::uint64_t, std::uint64_t)>
void run_fork_skynet(const Config& cfg, const char* name) {
  spool::Runtime rt = make_runtime(cfg);
  std::size_t spawned = 0, level = 1;
  std::uint64_t leaves = 1;
  for (int d = 1; d <= kSkynetDepth; ++d) {
    level *= 10;
    spawned += level;  // 10 + 100 + ... + 10^6
    leaves *= 10;
  }
  auto samples = measure(cfg, [&] {
    const auto t0 = Clock::now();
    const std::uint64_t v = rt.block_on(Skynet(0, leaves));
    const auto dt = Clock::now() - t0;
    check(v == kSkynetExpected, std::string(name) + ": wrong result " + std::to_string(v) +
                                    " (expected " + std::to_string(kSkynetExpected) + ")");
    return dt;
  });
  report_ns_per_op(name, samples, spawned);
}
void w12_fork_skynet(const Config& cfg) { run_fork_skynet<skynet>(cfg, "fork_skynet"); }
void w12_fork_skynet_spawn(const Config& cfg) {
  run_fork_skynet<skynet_spawn>(cfg, "fork_skynet_spawn");
}

// --- W13 fork_nqueens ---

constexpr int kQueens = 12;
constexpr std::uint64_t kQueensExpected = 14'200;
using Board = std::array<std::uint8_t, kQueens>;

// Whether a queen in (row, col) is attacked by the queens in rows 0..row-1.
bool queen_is_safe(const Board& b, int row, int col) {
  for (int r = 0; r < row; ++r) {
    const int c = b[static_cast<std::size_t>(r)], d = row - r;
    if (c == col || c + d == col || col + d == c) return false;
  }
  return true;
}

// Calls `child(next)` for each board that places a queen safely in `row` (each a copy).
template <class Child>
void for_each_safe_placement(const Board& board, int row, Child&& child) {
  for (int col = 0; col < kQueens; ++col) {
    if (!queen_is_safe(board, row, col)) continue;
    Board next = board;
    next[static_cast<std::size_t>(row)] = static_cast<std::uint8_t>(col);
    child(next);
  }
}

// Solutions below the partial board whose rows 0..row-1 are placed.
spool::Task<std::uint64_t> nqueens_spawn(Board board, int row) {
  if (row == kQueens) co_return 1;
  std::vector<spool::JoinHandle<std::uint64_t>> children;
  children.reserve(kQueens);
  for_each_safe_placement(board, row, [&](const Board& next) {
    children.push_back(spool::spawn(nqueens_spawn(next, row + 1)));
  });
  std::uint64_t solutions = 0;
  for (auto& c : children) solutions += co_await c;
  co_return solutions;
}

// The children in a ForkGroup (held in this frame, like the TBB peer's array of results).
spool::Task<std::uint64_t> nqueens(Board board, int row) {
  if (row == kQueens) co_return 1;
  spool::ForkGroup<std::uint64_t, kQueens> children;
  for_each_safe_placement(board, row,
                          [&](const Board& next) { children.fork(nqueens(next, row + 1)); });
  std::uint64_t solutions = 0;
  for (std::uint64_t s : co_await children.join()) solutions += s;
  co_return solutions;
}

// Tasks spawned by nqueens(empty, 0): one per safe placement at every row.
std::size_t nqueens_spawn_count(const Board& b, int row) {
  if (row == kQueens) return 0;
  std::size_t n = 0;
  for_each_safe_placement(b, row,
                          [&](const Board& next) { n += 1 + nqueens_spawn_count(next, row + 1); });
  return n;
}

template <spool::Task<std::uint64_t> (*Nqueens)(Board, int)>
void run_fork_nqueens(const Config& cfg, const char* name) {
  spool::Runtime rt = make_runtime(cfg);
  Board empty{};
  const std::size_t spawned = nqueens_spawn_count(empty, 0);
  auto samples = measure(cfg, [&] {
    const auto t0 = Clock::now();
    const std::uint64_t v = rt.block_on(Nqueens(Board{}, 0));
    const auto dt = Clock::now() - t0;
    check(v == kQueensExpected, std::string(name) + ": wrong result " + std::to_string(v) +
                                    " (expected " + std::to_string(kQueensExpected) + ")");
    return dt;
  });
  report_ns_per_op(name, samples, spawned);
}
void w13_fork_nqueens(const Config& cfg) { run_fork_nqueens<nqueens>(cfg, "fork_nqueens"); }
void w13_fork_nqueens_spawn(const Config& cfg) {
  run_fork_nqueens<nqueens_spawn>(cfg, "fork_nqueens_spawn");
}

}  // namespace

std::vector<Workload> fork_join_workloads() {
  return {
      {"W11", "fork_fib", w11_fork_fib},
      {"W11", "fork_fib_spawn", w11_fork_fib_spawn},
      {"W12", "fork_skynet", w12_fork_skynet},
      {"W12", "fork_skynet_spawn", w12_fork_skynet_spawn},
      {"W13", "fork_nqueens", w13_fork_nqueens},
      {"W13", "fork_nqueens_spawn", w13_fork_nqueens_spawn},
  };
}

}  // namespace spool_bench
