// IoSource's socket options and its adoption of a socket made elsewhere (from_fd).
#include <fcntl.h>
#include <linux/tcp.h>  // struct tcp_info with tcpi_segs_in (glibc's netinet/tcp.h lacks it)
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "driver/driver.hpp"
#include "runtime/current_driver.hpp"
#include "spool/detail/io_source.hpp"

namespace spool::detail {

namespace {

// What a descriptor is, as from_fd needs to know it.
struct Probe {
  int error = 0;  // why it is not a socket (ENOTSOCK, EBADF...); 0 when it is one
  int type = 0;
  int domain = 0;
  int protocol = 0;
  bool listening = false;
  bool connected = false;  // connected, connecting, or connected once (reset since)
};

// Linux's IPPROTO_MPTCP (multipath TCP: a TCP stream to the program), where the headers lack it.
constexpr int kMptcp = 262;

bool is_tcp(int protocol) noexcept { return protocol == IPPROTO_TCP || protocol == kMptcp; }

// Whether the TCP (or MPTCP) socket `fd`, which has no peer address, is still a
// connection: one that is connecting (SYN_SENT), or was connected and has been reset or
// closed since, as an accepted socket handed over after its client reset is. Such a socket
// is in the CLOSE state having received at least two segments (a connection needs one to
// be made — the SYN-ACK, or the handshake's ACK — and one more to end: a RST or a FIN). A
// socket that never connected has received none, or one: the RST that refused its connect.
// A kernel too old to count (tcp_info without tcpi_segs_in, before 4.2) gets the benefit of
// the doubt. (This file must not include glibc's netinet/tcp.h: it and linux/tcp.h both
// define struct tcp_info.)
bool tcp_was_connected(int fd) {
  constexpr int kTcpClose = 7;  // the kernel's TCP_CLOSE state (glibc's netinet/tcp.h has it,
                                // but not tcpi_segs_in; linux/tcp.h the reverse)
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  if (info.tcpi_state != kTcpClose) return true;
  const socklen_t needed = offsetof(tcp_info, tcpi_segs_in) + sizeof info.tcpi_segs_in;
  return len < needed || info.tcpi_segs_in >= 2;
}

Probe probe(int fd) {
  Probe p;
  auto get = [fd](int name, int& value) {
    socklen_t len = sizeof value;
    return ::getsockopt(fd, SOL_SOCKET, name, &value, &len) == 0;
  };
  if (!get(SO_TYPE, p.type)) {
    p.error = errno;
    return p;
  }
  int listening = 0;
  (void)get(SO_DOMAIN, p.domain);
  (void)get(SO_PROTOCOL, p.protocol);
  (void)get(SO_ACCEPTCONN, listening);
  p.listening = listening != 0;
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  p.connected =
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0 ||
      (p.type == SOCK_STREAM && is_tcp(p.protocol) && !p.listening && tcp_was_connected(fd));
  return p;
}

bool is_inet(int domain) noexcept { return domain == AF_INET || domain == AF_INET6; }

// Whether an IP socket of `type` has the protocol it must: TCP (or MPTCP) for a stream, UDP
// for datagrams.
bool inet_protocol_ok(int type, int protocol) noexcept {
  return type == SOCK_STREAM ? is_tcp(protocol) : protocol == IPPROTO_UDP;
}

bool matches(const Probe& p, IoSource::SocketKind kind) noexcept {
  if (p.error != 0 || p.type != kind.type || p.listening != kind.listening) return false;
  if (kind.unix_domain ? p.domain != AF_UNIX
                       : !is_inet(p.domain) || !inet_protocol_ok(p.type, p.protocol)) {
    return false;
  }
  return kind.type != SOCK_STREAM || kind.listening || p.connected;
}

std::string family_name(int domain) {
  switch (domain) {
    case AF_INET:
      return "AF_INET";
    case AF_INET6:
      return "AF_INET6";
    case AF_UNIX:
      return "AF_UNIX";
    default:
      return "family " + std::to_string(domain);
  }
}

std::string type_name(int type) {
  return type == SOCK_STREAM  ? "SOCK_STREAM"
         : type == SOCK_DGRAM ? "SOCK_DGRAM"
                              : "type " + std::to_string(type);
}

// "not a socket", "a listening SOCK_STREAM socket of AF_INET (protocol 6)"...
std::string describe(const Probe& p) {
  if (p.error == ENOTSOCK) return "not a socket";
  if (p.error != 0) return "not an open descriptor (" + std::string(std::strerror(p.error)) + ")";
  std::string state = p.listening             ? "a listening "
                      : p.type != SOCK_STREAM ? "a "
                      : p.connected           ? "a connected "
                                              : "an unconnected ";
  std::string out = state + type_name(p.type) + " socket of " + family_name(p.domain);
  if (is_inet(p.domain)) out += " (protocol " + std::to_string(p.protocol) + ")";
  return out;
}

// What from_fd takes, for its error message.
std::string wanted(IoSource::SocketKind kind) {
  const bool stream = kind.type == SOCK_STREAM;
  return std::string(kind.listening ? "a listening "
                     : stream       ? "a connected "
                                    : "a ") +
         type_name(kind.type) + " socket of " +
         (kind.unix_domain ? "AF_UNIX"
          : stream         ? "AF_INET or AF_INET6 (TCP)"
                           : "AF_INET or AF_INET6 (UDP)");
}

}  // namespace

IoSource IoSource::from_fd(int fd, SocketKind kind, const char* what) {
  std::shared_ptr<Driver> driver;
  try {
    driver = current_driver();  // (it may throw: a bad SPOOL_IO_BACKEND, no memory)
  } catch (...) {
    if (::fcntl(fd, F_GETFD) >= 0) ::close(fd);  // the header's promise: closed on a throw
    throw;
  }
  // A descriptor a spool object owns already (taken twice) stays open: it is that object's.
  // First, before a refusal of its kind would close it (epoll refused it later, after
  // closing it under its owner; io_uring took it twice, and both owners closed it).
  driver->io().refuse_registered(fd, what);
  const Probe p = probe(fd);
  if (!matches(p, kind)) {
    if (p.error != EBADF) ::close(fd);  // (not one that is not open: it may be another's now)
    throw std::invalid_argument(std::string(what) + ": descriptor " + std::to_string(fd) + " is " +
                                describe(p) + "; it takes " + wanted(kind));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 ||
      ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(),
                            std::string(what) + ": making the descriptor non-blocking");
  }
  IoSource source(std::move(driver), fd, what);
  // A connection's peer, while the kernel still knows it (see remember_peer).
  sockaddr_storage peer{};
  socklen_t len = sizeof peer;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
    source.remember_peer(peer, len);
  }
  return source;
}

void IoSource::set_option_bytes(int level, int name, const void* v, unsigned len,
                                const char* what) const {
  if (fd_ < 0) throw_closed();
  if (::setsockopt(fd_, level, name, v, len) != 0) throw_error(errno, what);
}

void IoSource::option_bytes(int level, int name, void* v, unsigned len, const char* what) const {
  if (fd_ < 0) throw_closed();
  socklen_t got = len;
  if (::getsockopt(fd_, level, name, v, &got) != 0) throw_error(errno, what);
}

}  // namespace spool::detail
