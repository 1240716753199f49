// UnixDatagram (its send and receive futures: datagram_ops.cpp).
#include "spool/net/unix_datagram.hpp"

#include <unistd.h>

#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include "net/unix_address.hpp"
#include "runtime/current_driver.hpp"

namespace spool::net {

namespace {

// A new non-blocking Unix datagram socket, bound to `path` if given, registered with the
// current driver.
detail::IoSource open_socket(std::optional<std::string_view> path, const std::string& what) {
  sockaddr_storage ss{};
  const socklen_t len = path ? detail::unix_address(*path, ss, what.c_str()) : 0;
  std::shared_ptr<detail::Driver> driver = detail::current_driver();  // before the socket
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), what + ": socket");
  if (len != 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), what);
  }
  return detail::IoSource(std::move(driver), fd, what.c_str());
}

// The path getsockname / getpeername gives.
std::string path_from(const detail::IoSource& s, int (*get)(int, sockaddr*, socklen_t*),
                      const char* what) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (get(s.open_fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) s.throw_error(errno, what);
  return detail::path_of(ss, len);
}

}  // namespace

UnixDatagram UnixDatagram::bind(std::string_view path) {
  return UnixDatagram(open_socket(path, "spool::net::UnixDatagram::bind to " + std::string(path)));
}

UnixDatagram UnixDatagram::unbound() {
  return UnixDatagram(open_socket(std::nullopt, "spool::net::UnixDatagram::unbound"));
}

std::pair<UnixDatagram, UnixDatagram> UnixDatagram::pair() {
  const auto& driver = detail::current_driver();  // before the sockets: it may throw
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::system_error(errno, std::generic_category(), "spool::net::UnixDatagram::pair");
  }
  auto [first, second] =
      detail::IoSource::adopt_pair(driver, fds, "spool::net::UnixDatagram::pair");
  return {UnixDatagram(std::move(first)), UnixDatagram(std::move(second))};
}

UnixDatagram UnixDatagram::from_fd(int fd) {
  return UnixDatagram(detail::IoSource::from_fd(fd, {true, SOCK_DGRAM, false},
                                                "spool::net::UnixDatagram::from_fd"));
}

void UnixDatagram::connect(std::string_view path) {
  sockaddr_storage ss{};
  const socklen_t len = detail::unix_address(path, ss, "spool::net::UnixDatagram::connect");
  if (::connect(source_.open_fd(), reinterpret_cast<const sockaddr*>(&ss), len) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            "spool::net::UnixDatagram::connect to " + std::string(path));
  }
}

socklen_t UnixDatagram::address_of(std::string_view path, sockaddr_storage& to) {
  return detail::unix_address(path, to, "spool::net::UnixDatagram::send_to");
}

std::string UnixDatagram::sender(const sockaddr_storage& from, socklen_t len) {
  return detail::path_of(from, len);
}

std::string UnixDatagram::local_path() const {
  return path_from(source_, ::getsockname, "spool::net::UnixDatagram::local_path");
}

std::string UnixDatagram::peer_path() const {
  return path_from(source_, ::getpeername, "spool::net::UnixDatagram::peer_path");
}

void UnixDatagram::shutdown(int how) {
  if (::shutdown(source_.open_fd(), how) != 0) {
    source_.throw_error(errno, "spool::net::UnixDatagram::shutdown");
  }
}

}  // namespace spool::net
