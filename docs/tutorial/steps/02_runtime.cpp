// Step 2: a Runtime, spawn, and JoinHandle: values, errors and cancellation.
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "spool/spool.hpp"

// CPU work: the sum of from, from + 1, ..., to - 1.
spool::Task<long> sum(long from, long to) {
  long total = 0;
  for (long i = from; i < to; ++i) total += i;
  co_return total;
}

spool::Task<int> fail() {
  throw std::runtime_error("the disk is full");
  co_return 0;  // never reached; makes this function a coroutine
}

spool::Task<void> run() {
  // Four tasks, each free to run on any worker thread: they run in parallel.
  std::vector<spool::JoinHandle<long>> parts;
  for (long i = 0; i < 4; ++i) {
    parts.push_back(spool::spawn(sum(i * 250'000, (i + 1) * 250'000)));
  }
  long total = 0;
  for (spool::JoinHandle<long>& part : parts) {
    total += co_await part;  // waits for that task and takes its value
  }
  std::printf("the sum of 0 to 999999 is %ld\n", total);

  // A task's exception comes out of its JoinHandle as a spool::JoinError.
  spool::JoinHandle<int> failing = spool::spawn(fail());
  try {
    co_await failing;
  } catch (const spool::JoinError& e) {
    std::printf("failed: %s\n", e.what());
  }

  // abort() cancels a task: its frame is destroyed, the destructors of its locals run.
  spool::JoinHandle<void> sleeper = spool::spawn(spool::sleep(std::chrono::hours(1)));
  sleeper.abort();
  try {
    co_await sleeper;
  } catch (const spool::JoinError& e) {
    std::printf("cancelled: %s\n", e.is_cancelled() ? "yes" : "no");
  }
}

int main() {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  rt.block_on(run());  // runs run() on this thread; spawned tasks run on the workers
}  // ~Runtime shuts down: tasks still alive are cancelled, the threads joined
