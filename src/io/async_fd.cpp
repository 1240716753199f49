// AsyncFd: a user's descriptor checked and registered like a socket.
#include "spool/io/async_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include "runtime/current_driver.hpp"

namespace spool {

namespace detail {

void throw_fd_error(int err, const char* what, int fd) {
  throw std::system_error(err, std::generic_category(),
                          std::string(what) + " (descriptor " + std::to_string(fd) + ")");
}

}  // namespace detail

namespace {

constexpr const char* kWhat = "spool::AsyncFd";

[[noreturn]] void refuse(int fd, const std::string& why) {
  throw std::invalid_argument(std::string(kWhat) + ": descriptor " + std::to_string(fd) + " " +
                              why);
}

// Throws std::invalid_argument unless `fd` is open, non-blocking and pollable.
void check_descriptor(int fd) {
  if (fd < 0) refuse(fd, "is no descriptor; pass an open, non-blocking one");
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) refuse(fd, std::string("is not open (") + std::strerror(errno) + ")");
  if ((flags & O_NONBLOCK) == 0) {
    refuse(fd,
           "is in blocking mode, so a read or write on it would block a worker; open it "
           "non-blocking (O_NONBLOCK, SOCK_NONBLOCK, TFD_NONBLOCK, EFD_NONBLOCK...) or set "
           "fcntl(fd, F_SETFL, flags | O_NONBLOCK) first");
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 &&
      (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISBLK(st.st_mode))) {
    refuse(fd,
           "is a regular file, a directory or a block device: always ready, so there is "
           "no readiness to wait for (epoll refuses them); read it on the blocking pool "
           "(spool::spawn_blocking)");
  }
}

}  // namespace

AsyncFd::AsyncFd(int fd) {
  check_descriptor(fd);
  const std::string what = std::string(kWhat) + ": registering descriptor " + std::to_string(fd);
  try {
    source_ =
        detail::IoSource(detail::current_driver(), fd, what.c_str(),
                         {.socket = false, .close_on_failure = false, .refuse_duplicate = true});
  } catch (const std::system_error& e) {
    if (e.code() != std::errc::operation_not_permitted) throw;
    throw std::system_error(
        e.code(), std::string(e.what()) + " (the kernel cannot poll this kind of descriptor)");
  }
}

Poll<AsyncFdReadyGuard> AsyncFdReadyFuture::poll(Context& cx) {
  if (!detail::coop_poll_proceed(cx)) return pending;
  const Poll<detail::IoSource::Readiness> r = source_->poll_ready(cx, waiter_, dir_);
  if (r.is_pending()) return pending;
  return Poll<AsyncFdReadyGuard>::ready(AsyncFdReadyGuard(*source_, r.value(), dir_));
}

}  // namespace spool
