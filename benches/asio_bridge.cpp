// spool-asio-bench: the Asio bridge's cost (issue 32: an Asio async_read_some awaited through
// spool::asio::use_task within 1.3x of the same read in a plain Asio coroutine). One byte is
// ping-ponged over a Unix socket pair: the pinger writes it and reads the echo, the ponger reads
// it and writes it back, each with async_write_some / async_read_some, `rounds` times. Variants:
//   asio-coroutine   two asio::awaitable coroutines (use_awaitable) on one io_context, run by
//                    one thread: the reference
//   use_task-drive   two spool tasks awaiting the same operations with use_task, on one thread
//                    that spool::asio::drive parks in io_context::run_one
//   use_task-thread  the same tasks on a one-worker spool runtime, the io_context run by a
//                    thread of its own (spool::asio::run): a cross-thread wake-up per operation
// Prints `RESULT asio-bridge <variant> <median ns per round trip> ns/op` (median of BENCH_REPS
// runs, default 5, after one warm-up run; BENCH_ROUNDS round trips each, default 100000), then
// each use_task variant's ratio to asio-coroutine. Arguments: the variants to run (default all).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/connect_pair.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "spool/asio.hpp"
#include "spool/spool.hpp"

namespace {

namespace net = boost::asio;
using Socket = net::local::stream_protocol::socket;
using spool::Task;
using spool::asio::use_task;

std::size_t env_or(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::stoul(v) : fallback;
}

// --- the reference: plain Asio coroutines ---

net::awaitable<void> coro_ping(Socket& s, std::size_t rounds) {
  std::array<char, 1> byte{'x'};
  for (std::size_t i = 0; i < rounds; ++i) {
    co_await s.async_write_some(net::buffer(byte), net::use_awaitable);
    co_await s.async_read_some(net::buffer(byte), net::use_awaitable);
  }
}

net::awaitable<void> coro_pong(Socket& s, std::size_t rounds) {
  std::array<char, 1> byte{};
  for (std::size_t i = 0; i < rounds; ++i) {
    co_await s.async_read_some(net::buffer(byte), net::use_awaitable);
    co_await s.async_write_some(net::buffer(byte), net::use_awaitable);
  }
}

void run_coroutines(std::size_t rounds) {
  net::io_context io(1);
  Socket a(io);
  Socket b(io);
  net::local::connect_pair(a, b);
  net::co_spawn(io, coro_ping(a, rounds), net::detached);
  net::co_spawn(io, coro_pong(b, rounds), net::detached);
  io.run();
}

// --- the same operations through use_task, in spool tasks ---

Task<void> task_ping(Socket& s, std::size_t rounds) {
  std::array<char, 1> byte{'x'};
  for (std::size_t i = 0; i < rounds; ++i) {
    co_await s.async_write_some(net::buffer(byte), use_task);
    co_await s.async_read_some(net::buffer(byte), use_task);
  }
}

Task<void> task_pong(Socket& s, std::size_t rounds) {
  std::array<char, 1> byte{};
  for (std::size_t i = 0; i < rounds; ++i) {
    co_await s.async_read_some(net::buffer(byte), use_task);
    co_await s.async_write_some(net::buffer(byte), use_task);
  }
}

void run_drive(std::size_t rounds) {
  net::io_context io(1);
  Socket a(io);
  Socket b(io);
  net::local::connect_pair(a, b);
  spool::asio::drive(io, spool::when_all(task_ping(a, rounds), task_pong(b, rounds)));
}

void run_own_thread(std::size_t rounds) {
  net::io_context io(1);
  Socket a(io);
  Socket b(io);
  net::local::connect_pair(a, b);
  auto guard = net::make_work_guard(io);
  std::thread io_thread([&io] { spool::asio::run(io); });
  {
    spool::Runtime rt = spool::Builder::multi_thread().worker_threads(1).build();
    auto ping = rt.spawn(task_ping(a, rounds));
    auto pong = rt.spawn(task_pong(b, rounds));
    spool::block_on(std::move(ping));
    spool::block_on(std::move(pong));
  }
  guard.reset();
  io_thread.join();
}

// Median ns per round trip of `reps` runs, after one warm-up.
double measure(const std::function<void(std::size_t)>& run, std::size_t rounds, std::size_t reps) {
  run(rounds);
  std::vector<double> ns;
  for (std::size_t r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    run(rounds);
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    ns.push_back(took.count() / static_cast<double>(rounds));
  }
  std::sort(ns.begin(), ns.end());
  return ns[ns.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::size_t rounds = env_or("BENCH_ROUNDS", 100'000);
    const std::size_t reps = std::max<std::size_t>(1, env_or("BENCH_REPS", 5));
    const std::vector<std::pair<std::string, std::function<void(std::size_t)>>> variants{
        {"asio-coroutine", run_coroutines},
        {"use_task-drive", run_drive},
        {"use_task-thread", run_own_thread},
    };
    std::vector<std::string> wanted(argv + 1, argv + argc);
    std::map<std::string, double> results;
    for (const auto& [name, run] : variants) {
      if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), name) == wanted.end()) {
        continue;
      }
      results[name] = measure(run, rounds, reps);
      std::printf("RESULT asio-bridge %s %.1f ns/op\n", name.c_str(), results[name]);
    }
    if (results.count("asio-coroutine") != 0) {
      for (const char* name : {"use_task-drive", "use_task-thread"}) {
        if (results.count(name) != 0) {
          std::printf("ratio %s / asio-coroutine: %.2f (target <= 1.3 for use_task)\n", name,
                      results[name] / results["asio-coroutine"]);
        }
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "spool-asio-bench: %s\n", e.what());
    return 1;
  }
}
