// spool::AsyncFd: the readiness of any non-blocking descriptor (a timerfd, an eventfd,
// inotify, a tty, a device, a socket of another library), awaited on spool's I/O driver.
#pragma once

#include <cerrno>
#include <concepts>
#include <optional>
#include <type_traits>
#include <utility>

#include "spool/coop.hpp"
#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/io_source.hpp"

namespace spool {

/// The readiness an AsyncFd operation waits for.
enum class Interest {
  kReadable,  ///< a read would not block (or the other side hung up)
  kWritable   ///< a write would not block (or the descriptor has an error)
};

namespace detail {
// Throws std::system_error(err) naming `what` and `fd`.
[[noreturn]] SPOOL_API void throw_fd_error(int err, const char* what, int fd);
// The Direction of `interest`.
constexpr IoSource::Direction direction_of(Interest interest) noexcept {
  return interest == Interest::kReadable ? IoSource::Direction::kRead : IoSource::Direction::kWrite;
}
}  // namespace detail

/// What `co_await fd.readable()` (or writable()) gives: the driver has seen the descriptor
/// ready in that direction. Make the non-blocking syscall; when it says EAGAIN, call
/// clear_ready() and await again (try_io does both). A guard dropped without clear_ready keeps
/// the readiness, so the next await is ready at once (right after a partial read, say).
/// Valid while its AsyncFd is neither moved nor destroyed.
class AsyncFdReadyGuard {
 public:
  /// The descriptor.
  int fd() const noexcept { return source_->fd(); }
  /// The direction is closed: for readable, the other end hung up (a read gives what is
  /// left, then 0 or an error); for writable, writes fail from now on.
  bool closed() const noexcept { return seen_.closed; }
  /// The descriptor has an error that the next syscall reports.
  bool error() const noexcept { return seen_.error; }
  /// Forgets this readiness (unless the driver saw a new event since): the next await
  /// waits for the next edge. Call it after the syscall said EAGAIN, never before.
  void clear_ready() noexcept { source_->clear_ready(seen_, dir_); }
  /// Runs `f(fd)`, a non-blocking syscall that returns ≥ 0 or -1 with errno (read, write,
  /// recv...): its result; std::nullopt after an EAGAIN, having cleared the readiness (await
  /// again); EINTR retries. Any other errno throws std::system_error naming the descriptor.
  template <class F>
  requires std::signed_integral<std::invoke_result_t<F&, int>>
      std::optional<std::invoke_result_t<F&, int>> try_io(F&& f) {
    for (;;) {
      const auto r = f(source_->fd());
      if (r >= 0) return r;
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) {
        clear_ready();
        return std::nullopt;
      }
      if (err != EINTR) detail::throw_fd_error(err, "spool::AsyncFdReadyGuard::try_io", fd());
    }
  }

 private:
  friend class AsyncFdReadyFuture;
  AsyncFdReadyGuard(detail::IoSource& source, detail::IoSource::Readiness seen,
                    detail::IoSource::Direction dir) noexcept
      : source_(&source), seen_(seen), dir_(dir) {}
  detail::IoSource* source_;
  detail::IoSource::Readiness seen_;
  detail::IoSource::Direction dir_;
};

/// The future of AsyncFd::readable / writable: ready with a guard once the driver has seen
/// the descriptor ready (at once if nothing cleared the readiness since the last event). It
/// may be moved until first polled; dropping it gives up its place in the wait.
class SPOOL_API AsyncFdReadyFuture {
 public:
  /// Waits for `interest` on `source`.
  AsyncFdReadyFuture(detail::IoSource& source, Interest interest) noexcept
      : source_(&source), dir_(detail::direction_of(interest)) {}
  /// Ready with the guard.
  Poll<AsyncFdReadyGuard> poll(Context& cx);

 private:
  detail::IoSource* source_;
  detail::IoSource::Direction dir_;
  detail::IoWaiter waiter_;
};

/// The future of AsyncFd::async_io: ready with `f(fd)`'s first result that is not EAGAIN.
template <class F>
class AsyncFdIoFuture {
 public:
  using Output = std::invoke_result_t<F&, int>;  ///< f's result type
  /// Runs `f` when `source` is ready for `interest`.
  AsyncFdIoFuture(detail::IoSource& source, Interest interest, F f)
      : source_(&source), dir_(detail::direction_of(interest)), f_(std::move(f)) {}
  /// Ready with f's result (≥ 0); throws std::system_error for any errno but EAGAIN / EINTR.
  Poll<Output> poll(Context& cx) {
    if (!detail::coop_poll_proceed(cx)) return pending;
    const Poll<long> r = source_->poll_io(cx, waiter_, dir_, &call, &f_);
    if (r.is_pending()) return pending;
    if (r.value() < 0) {
      detail::throw_fd_error(static_cast<int>(-r.value()), "spool::AsyncFd::async_io",
                             source_->fd());
    }
    return Poll<Output>::ready(static_cast<Output>(r.value()));
  }

 private:
  static long call(int fd, void* f) { return static_cast<long>((*static_cast<F*>(f))(fd)); }
  detail::IoSource* source_;
  detail::IoSource::Direction dir_;
  F f_;
  detail::IoWaiter waiter_;
};

/// Any non-blocking descriptor, registered with the I/O driver of the current runtime (the
/// process-wide one outside every runtime), like a socket: tasks await its readiness on
/// either backend (epoll, or io_uring polls), under any executor. It owns the descriptor:
/// destruction unregisters it, then closes it (release() gives it back instead). Any number
/// of tasks may wait on it at once. Like tokio's AsyncFd; the sockets, pipes and children
/// of spool wait the same way.
///
///     spool::AsyncFd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
///     for (;;) {
///       auto guard = co_await timer.readable();
///       std::uint64_t ticks;
///       if (guard.try_io([&](int fd) { return ::read(fd, &ticks, 8); })) break;
///     }  // (or: co_await timer.async_io(spool::Interest::kReadable, read_ticks))
class SPOOL_API AsyncFd {
 public:
  /// Takes `fd` and registers it. Throws std::invalid_argument (saying what is wrong) when
  /// `fd` is negative or not open, is in blocking mode (a syscall on it would block the
  /// worker: open it with O_NONBLOCK, TFD_NONBLOCK, EFD_NONBLOCK...), or is a regular file,
  /// directory or block device (always ready: epoll refuses them; use spawn_blocking, or
  /// spool's files later); std::system_error when the driver refuses it — EEXIST when
  /// `fd` is registered with this runtime already (another AsyncFd, a spool socket), EPERM
  /// for a device that cannot be polled. `fd` stays open, and the caller's, when it throws.
  explicit AsyncFd(int fd);
  /// Takes `other`'s descriptor (no operation may be pending on it).
  AsyncFd(AsyncFd&& other) noexcept = default;
  /// Closes this descriptor, then takes `other`'s.
  AsyncFd& operator=(AsyncFd&& other) noexcept = default;
  /// Unregisters and closes the descriptor.
  ~AsyncFd() = default;

  /// The descriptor (-1 after release or a move).
  int fd() const noexcept { return source_.fd(); }
  /// Unregisters the descriptor and gives it back, open; this AsyncFd is then empty. Tasks
  /// still waiting on it are woken, and their waits fail with std::logic_error.
  [[nodiscard]] int release() noexcept { return source_.release(); }

  /// Waits until the descriptor is readable: `auto guard = co_await fd.readable();`.
  AsyncFdReadyFuture readable() noexcept { return {source_, Interest::kReadable}; }
  /// Waits until the descriptor is writable.
  AsyncFdReadyFuture writable() noexcept { return {source_, Interest::kWritable}; }
  /// Waits for `interest`, then runs `f(fd)` (a non-blocking syscall: ≥ 0, or -1 with
  /// errno), again after each EAGAIN (clearing the readiness) and EINTR: ready with its
  /// result. Other errors throw std::system_error naming the descriptor.
  template <class F>
  requires std::signed_integral<std::invoke_result_t<F&, int>> AsyncFdIoFuture<std::decay_t<F>>
  async_io(Interest interest, F&& f) {
    return {source_, interest, std::forward<F>(f)};
  }

 private:
  detail::IoSource source_;
};

}  // namespace spool
