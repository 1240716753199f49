#include "sync/thread.hpp"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <mutex>
#include <system_error>
#include <utility>

namespace spool::detail {

namespace {
// Injected failures (tests only; start_thread is never on a hot path, so a mutex will do).
struct InjectedFailures {
  std::mutex mutex;
  int skip = 0;  // guarded by mutex
  int fail = 0;  // guarded by mutex
};
InjectedFailures& injected() {
  static InjectedFailures f;
  return f;
}

thread_local bool t_sigpipe_blocked = false;  // set by start_thread's threads, at their start

bool take_injected_failure() {
  InjectedFailures& f = injected();
  std::lock_guard lock(f.mutex);
  if (f.fail == 0) return false;
  if (f.skip > 0) {
    --f.skip;
    return false;
  }
  --f.fail;
  return true;
}
}  // namespace

std::thread start_thread(const std::string& name, std::function<void()> body) {
  if (take_injected_failure()) {
    throw std::system_error(EAGAIN, std::generic_category(),
                            "spool: could not start thread '" + name + "' (injected failure)");
  }
  return std::thread([short_name = name.substr(0, 15), body = std::move(body)] {
    pthread_setname_np(pthread_self(), short_name.c_str());
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    t_sigpipe_blocked = pthread_sigmask(SIG_BLOCK, &pipe, nullptr) == 0;
    set_up_sanitizer_signal_state();
    body();
  });
}

bool sigpipe_blocked_for_life() noexcept { return t_sigpipe_blocked; }

void fail_thread_starts(int skip, int n) {
  InjectedFailures& f = injected();
  std::lock_guard lock(f.mutex);
  f.skip = skip;
  f.fail = n;
}

}  // namespace spool::detail
