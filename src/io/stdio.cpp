// The process's stdin / stdout / stderr: reopened and polled where they can be, else
// blocking calls off the workers.
#include "spool/io/stdio.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "net/no_sigpipe.hpp"
#include "runtime/current_driver.hpp"
#include "runtime/off_thread.hpp"
#include "spool/net/io_error.hpp"

namespace spool::detail {

namespace {

// A new non-blocking open file of what `fd` is, registered with the current driver, when
// that is a pipe, a FIFO or a pollable character device (a terminal); else none. The
// kernel gives a FIFO or a device a new open file when /proc/self/fd/N is opened, so the
// flag stays off the descriptor the process inherited.
IoSource open_polled(int fd, bool write, const char* what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            std::string(what) + ": descriptor " + std::to_string(fd));
  }
  if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) return {};
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  // O_NOCTTY: a terminal opened again must not become the controlling one.
  const int again =
      ::open(path.c_str(), (write ? O_WRONLY : O_RDONLY) | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (again < 0) return {};  // no /proc, or a FIFO with no reader left (ENXIO)
  try {
    return IoSource(current_driver(), again, what, {.socket = false});
  } catch (const std::system_error& e) {
    if (e.code() != std::errc::operation_not_permitted) throw;
    return {};  // epoll cannot poll this device (/dev/null): the blocking pool then
  }
}

// `call()`'s result (a read or write of `fd`), or -errno: again after EINTR, and after
// EAGAIN once poll says `fd` is ready for `events`. An inherited descriptor may be
// non-blocking (a socket or pipe that another process made so: the flag is the open
// file's, shared with it, and spool leaves it alone), and then EAGAIN means "wait".
template <class Call>
long blocking_call(int fd, short events, Call call) {
  for (;;) {
    const long n = call();
    if (n >= 0) return n;
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      pollfd ready{fd, events, 0};
      if (::poll(&ready, 1, -1) < 0 && errno != EINTR) return -errno;
    } else if (err != EINTR) {
      return -err;
    }
  }
}

// One read of `fd` on the blocking pool (a thread of its own outside every runtime), into a
// buffer of the call's own: a dropped read leaves it running. The count, or -errno.
Task<long> blocking_read(int fd, std::span<std::byte> buf) {
  auto data = std::make_shared<std::vector<std::byte>>(buf.size());
  auto job = [fd, data] {
    return blocking_call(fd, POLLIN, [&] { return ::read(fd, data->data(), data->size()); });
  };
  const long n = co_await off_thread(std::move(job));
  if (n > 0) std::copy_n(data->begin(), static_cast<std::size_t>(n), buf.begin());
  co_return n;
}

// One write of a copy of `buf` to `fd`, as blocking_read reads.
Task<long> blocking_write(int fd, std::span<const std::byte> buf) {
  auto data = std::make_shared<std::vector<std::byte>>(buf.begin(), buf.end());
  auto job = [fd, data] {
    return blocking_call(fd, POLLOUT, [&] {
      NoSigpipe guard;
      const long n = ::write(fd, data->data(), data->size());
      if (n < 0) guard.consume_if_raised(errno);
      return n;
    });
  };
  co_return co_await off_thread(std::move(job));
}

}  // namespace

StdioStream::StdioStream(int fd, bool write, const char* what)
    : state_(std::make_shared<State>(State{open_polled(fd, write, what), fd, what})) {}

Task<std::size_t> StdioStream::read_on(std::shared_ptr<State> s, std::span<std::byte> buf,
                                       bool exact) {
  using Mode = net::ReadFuture::Mode;
  if (s->source) {
    co_return co_await net::ReadFuture(s->source, buf.data(), buf.size(),
                                       exact ? Mode::kExact : Mode::kSome, s->what);
  }
  std::size_t done = 0;
  do {
    const long n = co_await blocking_read(s->fd, buf.subspan(done));
    if (n < 0) throw std::system_error(static_cast<int>(-n), std::generic_category(), s->what);
    if (n == 0 && exact && done < buf.size()) {
      throw net::UnexpectedEof(std::string(s->what) + ": the input ended after " +
                               std::to_string(done) + " of the " + std::to_string(buf.size()) +
                               " bytes read_exact wanted");
    }
    done += static_cast<std::size_t>(n);
    if (n == 0) break;
  } while (exact && done < buf.size());
  co_return done;
}

Task<std::size_t> StdioStream::write_on(std::shared_ptr<State> s, std::span<const std::byte> buf,
                                        bool all) {
  if (s->source) {
    co_return co_await net::WriteFuture(s->source, buf.data(), buf.size(), all, s->what);
  }
  std::size_t done = 0;
  do {
    const long n = co_await blocking_write(s->fd, buf.subspan(done));
    if (n < 0) throw std::system_error(static_cast<int>(-n), std::generic_category(), s->what);
    done += static_cast<std::size_t>(n);
  } while (all && done < buf.size());
  co_return done;
}

}  // namespace spool::detail

namespace spool::io {

Stdin stdin() { return Stdin(); }

StdWriter stdout() { return StdWriter(STDOUT_FILENO, "spool::io::Stdout::write"); }

StdWriter stderr() { return StdWriter(STDERR_FILENO, "spool::io::Stderr::write"); }

}  // namespace spool::io
