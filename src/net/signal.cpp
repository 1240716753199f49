// spool::signal: a sigaction handler writes to a self-pipe; the thread in the process-wide driver
// pumps it (net/signal_pump.hpp) and wakes the Signal streams of each delivered signal.
#include "spool/signal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "driver/driver.hpp"
#include "net/signal_pump.hpp"
#include "spool/core/atomic_waker.hpp"
#include "spool/detail/atomic.hpp"
#include "sync/thread.hpp"

namespace spool {

namespace detail {

// One Signal stream: the generation it saw last, and its task's waker.
struct SignalListener {
  int signum;
  std::uint64_t seen;  // the owning stream's only
  AtomicWaker waker;
};

}  // namespace detail

namespace {

constexpr int kSignals = 65;  // signal numbers 1..64 (NSIG on Linux)

// What the handler touches: only lock-free atomics and write(2) (async-signal-safe).
// The pipe's write end: stored (seq_cst) once before the first handler is installed; loaded
// (seq_cst) by the handler.
detail::Atomic<int> g_pipe_write{-1};
// Set (seq_cst) by the handler before it writes to the pipe; exchanged (seq_cst) by the pump
// after it drained the pipe, so a delivery is seen by the pump run its byte wakes.
detail::Atomic<bool> g_pending[kSignals];

// C linkage, as sa_handler's type has; static, as only this file installs it.
extern "C" {
static void on_signal(int signum) {
  const int saved = errno;
  g_pending[signum].store(true, std::memory_order_seq_cst);
  const char byte = 1;
  // A full pipe already has a byte for the pump to find.
  [[maybe_unused]] const ssize_t r =
      ::write(g_pipe_write.load(std::memory_order_seq_cst), &byte, 1);
  errno = saved;
}
}

// The registry: the handlers installed, the listeners of each signal, the generations.
// Never destroyed (signals may come until the process exits).
class Registry {
 public:
  static Registry& get() {
    static Registry* const r = new Registry();
    return *r;
  }

  void add(detail::SignalListener* l) {
    detail::set_up_sanitizer_signal_state();
    std::lock_guard lock(mutex_);
    install_locked(l->signum);
    listeners_[l->signum].push_back(l);
    l->seen = generations_[l->signum].load(std::memory_order_acquire);
  }

  void remove(detail::SignalListener* l) noexcept {
    std::lock_guard lock(mutex_);
    auto& v = listeners_[l->signum];
    std::erase(v, l);
  }

  std::uint64_t generation(int signum) const noexcept {
    // Acquire: pairs with deliver's release increment.
    return generations_[signum].load(std::memory_order_acquire);
  }

  // Counts each delivered signal and wakes its listeners: the pump's, after each drain of
  // the pipe (on the thread in the process-wide driver).
  void deliver() {
    std::vector<Waker> to_wake;
    {
      std::lock_guard lock(mutex_);
      for (int s = 1; s < kSignals; ++s) {
        if (!g_pending[s].exchange(false, std::memory_order_seq_cst)) continue;
        generations_[s].fetch_add(1, std::memory_order_release);
        for (detail::SignalListener* l : listeners_[s]) {
          if (auto w = l->waker.take()) to_wake.push_back(std::move(*w));
        }
      }
    }
    for (Waker& w : to_wake) std::move(w).wake();
  }

 private:
  Registry() = default;

  void install_locked(int signum) {
    if (installed_[signum]) return;
    if (!pump_) start_pump_locked();
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (::sigaction(signum, &sa, nullptr) != 0) {
      throw std::system_error(errno, std::generic_category(),
                              "spool::signal(" + std::to_string(signum) + "): sigaction");
    }
    installed_[signum] = true;
  }

  void start_pump_locked() {
    const auto& driver = detail::Driver::global();  // before the pipe: it may throw
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
      throw std::system_error(errno, std::generic_category(), "spool::signal: pipe2");
    }
    try {
      pump_.emplace(driver, fds[0], [] { Registry::get().deliver(); });
    } catch (...) {
      ::close(fds[1]);  // the failed registration closed fds[0]
      throw;
    }
    g_pipe_write.store(fds[1], std::memory_order_seq_cst);
    // Set up for good: a failure below is not retried with a new pipe. The thread in the driver
    // pumps, the background thread when no block_on drives it (std::system_error if the
    // thread cannot start).
    driver->ensure_driven();
  }

  std::mutex mutex_;
  std::vector<detail::SignalListener*> listeners_[kSignals];  // guarded by mutex_
  bool installed_[kSignals] = {};                             // guarded by mutex_
  // Deliveries counted so far: incremented (release) by deliver; loaded (acquire) by recv.
  detail::Atomic<std::uint64_t> generations_[kSignals] = {};
  std::optional<detail::SignalPump> pump_;  // set once, under mutex_
};

}  // namespace

Signal signal(int signum) {
  switch (signum) {
    case SIGKILL:
    case SIGSTOP:
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
      throw std::invalid_argument("spool::signal(" + std::to_string(signum) +
                                  "): this signal cannot be caught, or reports a fault that a "
                                  "handler must not return from");
    default:
      break;
  }
  if (signum < 1 || signum >= kSignals) {
    throw std::invalid_argument("spool::signal(" + std::to_string(signum) +
                                "): not a signal number (1 to 64)");
  }
  return Signal(signum);
}

Signal::Signal(int signum) : listener_(std::make_unique<detail::SignalListener>()) {
  listener_->signum = signum;
  Registry::get().add(listener_.get());
}

Signal::Signal(Signal&&) noexcept = default;
Signal& Signal::operator=(Signal&& other) noexcept {
  if (this != &other) {
    if (listener_) Registry::get().remove(listener_.get());
    listener_ = std::move(other.listener_);
  }
  return *this;
}

Signal::~Signal() {
  if (listener_) Registry::get().remove(listener_.get());
}

Signal::RecvFuture Signal::recv() {
  if (!listener_) throw std::logic_error("spool::Signal::recv on a moved-from Signal");
  return RecvFuture(*listener_);
}

Poll<std::optional<int>> Signal::poll_next(Context& cx) {
  if (recv().poll(cx).is_pending()) return pending;
  return Poll<std::optional<int>>(listener_->signum);
}

Poll<void> Signal::RecvFuture::poll(Context& cx) {
  const Registry& reg = Registry::get();
  std::uint64_t g = reg.generation(listener_->signum);
  if (g == listener_->seen) {
    listener_->waker.register_waker(cx.waker());
    g = reg.generation(listener_->signum);  // a pump between the load and the registration
    if (g == listener_->seen) return pending;
  }
  listener_->seen = g;
  return Poll<void>::ready();
}

}  // namespace spool
