// UdpSocket (its send and receive futures: datagram_ops.cpp).
#include "spool/net/udp.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "net/ip_ttl.hpp"
#include "runtime/current_driver.hpp"

namespace spool::net {

namespace {

SocketAddr address_of(const detail::IoSource& s, int (*get)(int, sockaddr*, socklen_t*),
                      const char* what) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (get(s.open_fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) s.throw_error(errno, what);
  return SocketAddr(reinterpret_cast<const sockaddr*>(&ss), len);
}

}  // namespace

UdpSocket UdpSocket::bind(const SocketAddr& addr) {
  const std::string what = "spool::net::UdpSocket::bind to " + addr.to_string();
  std::shared_ptr<detail::Driver> driver = detail::current_driver();  // before the socket
  const int fd =
      ::socket(addr.is_ipv6() ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), what + ": socket");
  if (::bind(fd, addr.data(), addr.size()) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), what);
  }
  return UdpSocket(detail::IoSource(std::move(driver), fd, what.c_str()));
}

void UdpSocket::connect(const SocketAddr& addr) {
  if (::connect(source_.open_fd(), addr.data(), addr.size()) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            "spool::net::UdpSocket::connect to " + addr.to_string());
  }
}

UdpSocket UdpSocket::from_fd(int fd) {
  return UdpSocket(
      detail::IoSource::from_fd(fd, {false, SOCK_DGRAM, false}, "spool::net::UdpSocket::from_fd"));
}

void UdpSocket::set_ttl(int ttl) {
  detail::set_ip_ttl(source_, ttl, "spool::net::UdpSocket::set_ttl");
}

int UdpSocket::ttl() const { return detail::ip_ttl(source_, "spool::net::UdpSocket::ttl"); }

void UdpSocket::set_broadcast(bool on) {
  source_.set_option(SOL_SOCKET, SO_BROADCAST, on ? 1 : 0, "spool::net::UdpSocket::set_broadcast");
}

bool UdpSocket::broadcast() const {
  return source_.option<int>(SOL_SOCKET, SO_BROADCAST, "spool::net::UdpSocket::broadcast") != 0;
}

SocketAddr UdpSocket::local_addr() const {
  return address_of(source_, ::getsockname, "spool::net::UdpSocket::local_addr");
}

SocketAddr UdpSocket::peer_addr() const {
  return address_of(source_, ::getpeername, "spool::net::UdpSocket::peer_addr");
}

}  // namespace spool::net
