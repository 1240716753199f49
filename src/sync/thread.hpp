// Starting the runtime's threads: one place that names them and that tests can make fail.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <functional>
#include <string>
#include <thread>

namespace spool::detail {

// Starts a thread named `name` (truncated to the 15 bytes Linux keeps: what `top -H`, `ps -L`
// and gdb show) that runs `body`, with SIGPIPE blocked (see sigpipe_blocked_for_life). Throws
// std::system_error when the thread cannot be started, exactly as std::thread does; callers undo
// what they prepared for it.
std::thread start_thread(const std::string& name, std::function<void()> body);

// True on the threads start_thread started: they block SIGPIPE for their whole life, so a
// pipe write there needs no signal-mask change around it (net/no_sigpipe.hpp). Code that
// runs on them must not unblock SIGPIPE.
bool sigpipe_blocked_for_life() noexcept;

// Under ThreadSanitizer, has TSan set up the calling thread's signal state now; elsewhere,
// nothing. TSan sets it up lazily, at the thread's first blocking call, and loses a signal
// that arrives meanwhile (its handler sets up a second state, which the first then replaces:
// g++ 12's runtime). start_thread's threads call it as they start, spool::signal the thread
// that asks for a signal, and block_on the thread it blocks.
inline void set_up_sanitizer_signal_state() noexcept {
#if defined(__SANITIZE_THREAD__)
  pthread_kill(pthread_self(), 0);  // TSan's interceptor sets the state up; signal 0 sends none
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  pthread_kill(pthread_self(), 0);
#endif
#endif
}

// For tests: after `skip` more successful calls, the next `n` calls of start_thread throw
// std::system_error (EAGAIN, as when the process is out of threads) instead of starting one.
void fail_thread_starts(int skip, int n);

}  // namespace spool::detail
