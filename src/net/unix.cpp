// UnixListener and UnixStream.
#include "spool/net/unix.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "net/unix_address.hpp"
#include "runtime/current_driver.hpp"

namespace spool::net {

namespace {

constexpr int kBacklog = 1024;

}  // namespace

ConnectFuture<UnixStream> UnixStream::connect(std::string_view path) {
  sockaddr_storage ss{};
  const socklen_t len = detail::unix_address(path, ss, "spool::net::UnixStream::connect");
  return ConnectFuture<UnixStream>(
      detail::Connecting(detail::current_driver(), ss, len,
                         "spool::net::UnixStream::connect to " + std::string(path)));
}

UnixStream UnixStream::from_fd(int fd) {
  return UnixStream(
      detail::IoSource::from_fd(fd, {true, SOCK_STREAM, false}, "spool::net::UnixStream::from_fd"));
}

UnixListener UnixListener::from_fd(int fd) {
  detail::IoSource source =
      detail::IoSource::from_fd(fd, {true, SOCK_STREAM, true}, "spool::net::UnixListener::from_fd");
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(source.fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    source.throw_error(errno, "spool::net::UnixListener::from_fd: getsockname");
  }
  return UnixListener(std::move(source), detail::path_of(ss, len));
}

std::pair<UnixStream, UnixStream> UnixStream::pair() {
  const auto& driver = detail::current_driver();  // before the sockets: it may throw
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::system_error(errno, std::generic_category(), "spool::net::UnixStream::pair");
  }
  auto [first, second] = detail::IoSource::adopt_pair(driver, fds, "spool::net::UnixStream::pair");
  return {UnixStream(std::move(first)), UnixStream(std::move(second))};
}

std::string UnixStream::peer_of(const detail::Accepted& a) {
  return detail::path_of(a.peer, a.peer_len);
}

void UnixStream::shutdown(int how) {
  if (::shutdown(source_.open_fd(), how) != 0) {
    source_.throw_error(errno, "spool::net::UnixStream::shutdown");
  }
}

std::string UnixStream::peer_path() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(source_.open_fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    source_.throw_error(errno, "spool::net::UnixStream::peer_path");
  }
  return detail::path_of(ss, len);
}

UnixListener UnixListener::bind(std::string_view path) {
  const std::string what = "spool::net::UnixListener::bind to " + std::string(path);
  sockaddr_storage ss{};
  const socklen_t len = detail::unix_address(path, ss, "spool::net::UnixListener::bind");
  std::shared_ptr<detail::Driver> driver = detail::current_driver();  // before the socket
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), what + ": socket");
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0 || ::listen(fd, kBacklog) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), what);
  }
  return UnixListener(detail::IoSource(std::move(driver), fd, what.c_str()), std::string(path));
}

}  // namespace spool::net
