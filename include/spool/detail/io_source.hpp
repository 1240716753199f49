// IoSource: an open non-blocking file descriptor registered with a driver stack's I/O layer.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "spool/core/context.hpp"
#include "spool/core/poll.hpp"
#include "spool/detail/atomic.hpp"
#include "spool/detail/io_waiter.hpp"

namespace spool {
class Sleep;
}

namespace spool::detail {

class Driver;
class RingFd;
class ScheduledIo;

/// How an IoSource takes its descriptor.
struct IoAdopt {
  bool socket = true;            ///< a socket (recv / send), else a pipe or other fd (read / write)
  bool close_on_failure = true;  ///< a failed registration closes the fd (else it stays open)
  bool refuse_duplicate = false;  ///< refuse an fd already registered with the driver (AsyncFd)
};

/// A non-blocking fd and its registration (src/driver/io/): every spool socket, pipe and
/// AsyncFd holds one. Closing (destruction) unregisters the fd, then closes it. Any number
/// of tasks may wait on it at once, each through the IoWaiter of its operation's future.
/// libspool.so exports the members that public inline code calls (SPOOL_API on each), not
/// the ones only spool's sources call.
class IoSource {
 public:
  /// Which readiness an operation waits for.
  enum class Direction { kRead, kWrite };
  /// A non-blocking syscall on `fd`: its result (≥ 0), or -1 with errno set.
  using Op = long (*)(int fd, void* arg);
  /// What a readiness wait saw (poll_ready): clear_ready takes it back after an EAGAIN.
  struct Readiness {
    std::uint32_t tick;  ///< the driver's event count when it was seen
    bool closed;         ///< the direction is closed (the peer hung up, or shut its side)
    bool error;          ///< the descriptor has an error the next syscall reports
  };

  /// No descriptor.
  IoSource() noexcept = default;
  /// Takes `fd` (non-blocking) and registers it with `driver`'s I/O layer. Throws
  /// std::system_error when it cannot be registered (`what` names the operation in the
  /// message), after closing `fd` unless `how` says otherwise.
  SPOOL_API IoSource(std::shared_ptr<Driver> driver, int fd, const char* what, IoAdopt how = {});
  /// Takes `other`'s descriptor (a pending operation must not be in flight on it).
  SPOOL_API IoSource(IoSource&& other) noexcept;
  /// Closes this descriptor, then takes `other`'s.
  SPOOL_API IoSource& operator=(IoSource&& other) noexcept;
  IoSource(const IoSource&) = delete;
  IoSource& operator=(const IoSource&) = delete;
  /// Closes the descriptor.
  SPOOL_API ~IoSource();

  /// The descriptor (-1 when there is none).
  int fd() const noexcept { return fd_; }
  /// The descriptor, for a socket call of spool's sources; throws the std::logic_error of a
  /// closed or moved-from socket when there is none (a call on -1 would say only EBADF).
  int open_fd() const;
  /// True while it holds a descriptor.
  explicit operator bool() const noexcept { return fd_ >= 0; }

  /// Runs `op(fd, arg)` when the descriptor is ready for `dir`, again after each EAGAIN
  /// (clearing the readiness it used) and EINTR: ready with the result, or with -errno for
  /// any other failure (`waiter` then leaves its place); pending (`waiter` waiting with the
  /// task's waker, the driver installed in the executor or driven in the background) until
  /// the driver reports an edge. `waiter` belongs to the calling future. `len`, for a
  /// stream read or write of that many bytes: a result of fewer bytes (but some) shows the
  /// kernel's buffer drained or filled, so the readiness is cleared then too, saving the
  /// next call's EAGAIN. Throws std::system_error when the runtime of this socket has shut
  /// down.
  SPOOL_API Poll<long> poll_io(Context& cx, IoWaiter& waiter, Direction dir, Op op, void* arg,
                               std::size_t len = 0);
  /// Ready once the descriptor is ready for `dir` (`waiter` then leaves its place); pending
  /// as poll_io is. Throws as poll_io does when the runtime has shut down or the driver
  /// stopped watching the fd.
  Poll<Readiness> poll_ready(Context& cx, IoWaiter& waiter, Direction dir);
  /// After a syscall said EAGAIN: forgets the readiness `seen` reported for `dir` (and the
  /// error, which the syscall consumed), unless an event came since.
  SPOOL_API void clear_ready(Readiness seen, Direction dir) noexcept;
  /// True for a socket (recv / send), false for a pipe or another fd (read / write).
  bool is_socket() const noexcept { return socket_; }
  /// True for a socket of a runtime on the io_uring backend: its stream reads and writes may
  /// run on a worker's ring (src/net/ring_stream.hpp). Decided once, so that on epoll the
  /// futures' check is one predictable branch.
  bool ring_streams() const noexcept { return ring_streams_; }
  /// The socket's addresses for an error message: " (local 127.0.0.1:5000, peer
  /// 127.0.0.1:6379)" (the peer's as remember_peer kept it, once the kernel no longer gives
  /// it; "?" for one unknown); empty without a descriptor or for one that is no socket.
  std::string addresses() const;
  /// Throws std::system_error(err) whose message is `what` followed by addresses().
  [[noreturn]] void throw_error(int err, const char* what) const;
  /// Keeps `addr` (`len` bytes), the peer of a connection, for throw_error: after a reset the
  /// kernel forgets it (getpeername says ENOTCONN), and a reset is the error whose message
  /// most needs it. Only an IP address is kept (a Unix peer stays known to the kernel).
  void remember_peer(const sockaddr_storage& addr, socklen_t len) noexcept;
  /// What a socket handed over by fd (from_fd) must be.
  struct SocketKind {
    bool unix_domain;  ///< AF_UNIX, else AF_INET or AF_INET6
    int type;          ///< SOCK_STREAM or SOCK_DGRAM
    bool listening;    ///< a listener (SO_ACCEPTCONN), else not; a non-listening stream
                       ///< must also have connected (or be connecting)
  };
  /// Takes `fd`, an open socket of `kind` in blocking or non-blocking mode (a socket made by
  /// other code, or inherited), makes it non-blocking and registers it with the current
  /// runtime's driver. Throws std::invalid_argument, naming `what` and saying what the fd
  /// is, when it is not a socket of `kind` (and std::system_error when it cannot be set up);
  /// `fd` is closed then too, as it would be had it been taken. One that a spool object of
  /// this runtime owns already is refused (EEXIST) and left open.
  static IoSource from_fd(int fd, SocketKind kind, const char* what);

  /// setsockopt(level, name, value); throws std::system_error naming `what`.
  template <class T>
  void set_option(int level, int name, const T& value, const char* what) const {
    set_option_bytes(level, name, &value, sizeof value, what);
  }
  /// getsockopt(level, name) as a `T`; throws std::system_error naming `what`.
  template <class T>
  T option(int level, int name, const char* what) const {
    T value{};
    option_bytes(level, name, &value, sizeof value, what);
    return value;
  }

  /// Takes both of `fds` (a socketpair's, a pipe's) and registers them with `driver`: both are
  /// closed when either registration throws.
  static std::pair<IoSource, IoSource> adopt_pair(const std::shared_ptr<Driver>& driver,
                                                  const int (&fds)[2], const char* what,
                                                  IoAdopt how = {});
  /// Registers `fd` (non-blocking; an accepted connection) with this socket's driver.
  IoSource adopt(int fd, const char* what) const { return IoSource(driver_, fd, what); }
  /// A Sleep on the clock of this socket's driver (the accept back-off).
  Sleep sleep_for(std::chrono::nanoseconds d) const;
  /// Counts an accept that backed off (RuntimeMetrics::io_accept_backoffs).
  void count_accept_backoff() const noexcept;
  /// Unregisters and closes the descriptor now (idempotent). The operations of other tasks
  /// that wait on it are woken, and fail with throw_closed's error at their next poll.
  SPOOL_API void close() noexcept;
  /// Unregisters the descriptor and gives it back, open (-1 when there is none); wakes the
  /// waiting operations as close() does.
  SPOOL_API int release() noexcept;
  /// The descriptor's state shared with its operations on io_uring rings, made by the first
  /// (src/net/ring_stream.hpp): it keeps the descriptor open until the last of them ends.
  /// Null while there is none; spool's sources only.
  RingFd* ring_fd() const noexcept { return ring_fd_.load(std::memory_order_acquire); }
  /// Where ring_fd() is kept, for src/net/ring_stream.cpp's make_ring_fd (spool's sources
  /// only).
  Atomic<RingFd*>& ring_fd_slot() noexcept { return ring_fd_; }

 private:
  // poll_ready, but `waiter` keeps its place when ready (poll_io's retries after EAGAIN).
  Poll<Readiness> wait_ready(Context& cx, IoWaiter& waiter, Direction dir);
  // Throws the std::logic_error of an operation on a closed or moved-from socket.
  [[noreturn]] static void throw_closed();
  SPOOL_API void set_option_bytes(int level, int name, const void* v, unsigned len,
                                  const char* what) const;
  SPOOL_API void option_bytes(int level, int name, void* v, unsigned len, const char* what) const;

  // Unregisters the descriptor; the descriptor, and the ring state that may still hold it.
  // The wakers of the operations waiting on it go to `woken` (dropped when null).
  std::pair<int, RingFd*> unregister(std::vector<Waker>* woken) noexcept;
  // Unregisters and closes the descriptor, the waiting operations' wakers into `woken`.
  void shut(std::vector<Waker>* woken) noexcept;

  std::shared_ptr<Driver> driver_;
  ScheduledIo* io_ = nullptr;
  // See ring_fd(). Made by the first ring operation (a compare-exchange, acq_rel: the halves
  // of a split stream share one IoSource), read (acquire) by the operations after it.
  Atomic<RingFd*> ring_fd_{nullptr};
  int fd_ = -1;
  bool socket_ = true;         // see is_socket
  bool ring_streams_ = false;  // see ring_streams
  socklen_t peer_len_ = 0;     // of peer_; 0: no peer remembered
  sockaddr_in6 peer_{};        // remember_peer's (an IPv4 address fits too)
};

}  // namespace spool::detail
