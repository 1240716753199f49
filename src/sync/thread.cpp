#include "sync/thread.hpp"

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <system_error>
#include <utility>

namespace spool::detail {

namespace {
// Injected failures still to come. Written by tests (fail_next_thread_starts) and consumed
// by start_thread with relaxed RMWs: only the count matters, and a test arms it before it
// triggers the thread starts it wants to fail (ordered by that thread's own program order).
std::atomic<int> failures_to_inject{0};

bool take_injected_failure() noexcept {
  int n = failures_to_inject.load(std::memory_order_relaxed);
  while (n > 0) {
    if (failures_to_inject.compare_exchange_weak(n, n - 1, std::memory_order_relaxed)) return true;
  }
  return false;
}
}  // namespace

std::thread start_thread(const std::string& name, std::function<void()> body) {
  if (take_injected_failure()) {
    throw std::system_error(EAGAIN, std::generic_category(),
                            "spool: could not start thread '" + name + "' (injected failure)");
  }
  return std::thread([short_name = name.substr(0, 15), body = std::move(body)] {
    pthread_setname_np(pthread_self(), short_name.c_str());
    body();
  });
}

void fail_next_thread_starts(int n) noexcept {
  failures_to_inject.store(n, std::memory_order_relaxed);
}

}  // namespace spool::detail
