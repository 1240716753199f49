// IoSource's socket options and its adoption of a socket made elsewhere (from_fd).
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include "runtime/current_driver.hpp"
#include "spool/detail/io_source.hpp"

namespace spool::detail {

namespace {

// What `fd` is, for the error message: "a SOCK_DGRAM socket of family 2", "not a socket".
std::string describe(int fd) {
  int type = 0;
  int domain = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
    return errno == ENOTSOCK ? "not a socket" : "not an open descriptor";
  }
  len = sizeof domain;
  (void)::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
  int listening = 0;
  len = sizeof listening;
  (void)::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len);
  return std::string(listening != 0 ? "a listening " : "a ") +
         (type == SOCK_STREAM  ? "SOCK_STREAM"
          : type == SOCK_DGRAM ? "SOCK_DGRAM"
                               : "type " + std::to_string(type)) +
         " socket of family " + std::to_string(domain);
}

bool is_kind(int fd, IoSource::SocketKind kind) {
  int type = 0;
  int domain = 0;
  int listening = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) return false;
  len = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) return false;
  len = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0) return false;
  const bool family_ok =
      kind.unix_domain ? domain == AF_UNIX : (domain == AF_INET || domain == AF_INET6);
  return family_ok && type == kind.type && (listening != 0) == kind.listening;
}

}  // namespace

IoSource IoSource::from_fd(int fd, SocketKind kind, const char* what) {
  if (!is_kind(fd, kind)) {
    const std::string is = describe(fd);
    if (fd >= 0) ::close(fd);
    throw std::invalid_argument(
        std::string(what) + ": descriptor " + std::to_string(fd) + " is " + is + "; it takes " +
        (kind.listening             ? "a listening "
         : kind.type == SOCK_STREAM ? "a connected "
                                    : "a ") +
        (kind.type == SOCK_STREAM ? "SOCK_STREAM" : "SOCK_DGRAM") + " socket of family " +
        (kind.unix_domain ? "AF_UNIX" : "AF_INET or AF_INET6"));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ||
      ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(),
                            std::string(what) + ": making the descriptor non-blocking");
  }
  return IoSource(current_driver(), fd, what);
}

void IoSource::set_option_bytes(int level, int name, const void* v, unsigned len,
                                const char* what) const {
  if (::setsockopt(fd_, level, name, v, len) != 0) throw_error(errno, what);
}

void IoSource::option_bytes(int level, int name, void* v, unsigned len, const char* what) const {
  socklen_t got = len;
  if (::getsockopt(fd_, level, name, v, &got) != 0) throw_error(errno, what);
}

}  // namespace spool::detail
