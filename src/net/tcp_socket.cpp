// TcpSocket: a TCP socket set up before it connects or listens.
#include "spool/net/tcp_socket.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "runtime/current_driver.hpp"

namespace spool::net {

namespace {

int new_socket(int family, const char* what) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), what);
  return fd;
}

}  // namespace

TcpSocket TcpSocket::new_v4() {
  return TcpSocket(new_socket(AF_INET, "spool::net::TcpSocket::new_v4"));
}

TcpSocket TcpSocket::new_v6() {
  return TcpSocket(new_socket(AF_INET6, "spool::net::TcpSocket::new_v6"));
}

TcpSocket::TcpSocket(TcpSocket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

TcpSocket& TcpSocket::operator=(TcpSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

TcpSocket::~TcpSocket() {
  if (fd_ >= 0) ::close(fd_);
}

int TcpSocket::fd(const char* what) const {
  if (fd_ < 0) {
    throw std::logic_error(std::string(what) +
                           ": the TcpSocket was moved from (or already connected or listening); "
                           "use the object it was moved to");
  }
  return fd_;
}

void TcpSocket::set_int(int level, int name, int value, const char* what) {
  if (::setsockopt(fd(what), level, name, &value, sizeof value) != 0) {
    throw std::system_error(errno, std::generic_category(), what);
  }
}

int TcpSocket::get_int(int level, int name, const char* what) const {
  int value = 0;
  socklen_t len = sizeof value;
  if (::getsockopt(fd(what), level, name, &value, &len) != 0) {
    throw std::system_error(errno, std::generic_category(), what);
  }
  return value;
}

void TcpSocket::set_reuseaddr(bool on) {
  set_int(SOL_SOCKET, SO_REUSEADDR, on ? 1 : 0, "spool::net::TcpSocket::set_reuseaddr");
}

bool TcpSocket::reuseaddr() const {
  return get_int(SOL_SOCKET, SO_REUSEADDR, "spool::net::TcpSocket::reuseaddr") != 0;
}

void TcpSocket::set_reuseport(bool on) {
  set_int(SOL_SOCKET, SO_REUSEPORT, on ? 1 : 0, "spool::net::TcpSocket::set_reuseport");
}

bool TcpSocket::reuseport() const {
  return get_int(SOL_SOCKET, SO_REUSEPORT, "spool::net::TcpSocket::reuseport") != 0;
}

// SO_SNDBUF / SO_RCVBUF: a byte count, clamped to the int the option takes.
void TcpSocket::set_buffer_size(int name, std::uint32_t bytes, const char* what) {
  set_int(SOL_SOCKET, name, static_cast<int>(std::min<std::uint32_t>(bytes, INT32_MAX)), what);
}

std::uint32_t TcpSocket::buffer_size(int name, const char* what) const {
  return static_cast<std::uint32_t>(get_int(SOL_SOCKET, name, what));
}

void TcpSocket::set_send_buffer_size(std::uint32_t bytes) {
  set_buffer_size(SO_SNDBUF, bytes, "spool::net::TcpSocket::set_send_buffer_size");
}

std::uint32_t TcpSocket::send_buffer_size() const {
  return buffer_size(SO_SNDBUF, "spool::net::TcpSocket::send_buffer_size");
}

void TcpSocket::set_recv_buffer_size(std::uint32_t bytes) {
  set_buffer_size(SO_RCVBUF, bytes, "spool::net::TcpSocket::set_recv_buffer_size");
}

std::uint32_t TcpSocket::recv_buffer_size() const {
  return buffer_size(SO_RCVBUF, "spool::net::TcpSocket::recv_buffer_size");
}

void TcpSocket::set_nodelay(bool on) {
  set_int(IPPROTO_TCP, TCP_NODELAY, on ? 1 : 0, "spool::net::TcpSocket::set_nodelay");
}

void TcpSocket::check_family(const SocketAddr& addr, const char* what) const {
  const bool v6 = get_int(SOL_SOCKET, SO_DOMAIN, what) == AF_INET6;
  if (v6 != addr.is_ipv6()) {
    throw std::invalid_argument(std::string(what) + ": " + addr.to_string() + " is an " +
                                (addr.is_ipv6() ? "IPv6" : "IPv4") + " address and the socket is " +
                                (v6 ? "IPv6" : "IPv4") +
                                "; make it with TcpSocket::for_address(addr)");
  }
}

void TcpSocket::bind(const SocketAddr& addr) {
  const std::string what = "spool::net::TcpSocket::bind to " + addr.to_string();
  check_family(addr, what.c_str());
  if (::bind(fd(what.c_str()), addr.data(), addr.size()) != 0) {
    throw std::system_error(errno, std::generic_category(), what);
  }
}

SocketAddr TcpSocket::local_addr() const {
  const char* what = "spool::net::TcpSocket::local_addr";
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd(what), reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
    throw std::system_error(errno, std::generic_category(), what);
  }
  return SocketAddr(reinterpret_cast<const sockaddr*>(&ss), len);
}

ConnectFuture<TcpStream> TcpSocket::connect(const SocketAddr& addr) && {
  const char* what = "spool::net::TcpSocket::connect";
  check_family(addr, what);
  ConnectFuture<TcpStream> f = TcpStream::connect_fd(fd(what), addr, what);
  fd_ = -1;  // the future owns it now
  return f;
}

TcpListener TcpSocket::listen(std::uint32_t backlog) && {
  const char* what = "spool::net::TcpSocket::listen";
  const int backlog_int = static_cast<int>(std::min<std::uint32_t>(backlog, INT32_MAX));
  if (::listen(fd(what), backlog_int) != 0)
    throw std::system_error(errno, std::generic_category(), what);
  // The driver first: if getting it throws, the descriptor stays with this TcpSocket.
  std::shared_ptr<detail::Driver> driver = detail::current_driver();
  return TcpListener(detail::IoSource(std::move(driver), std::exchange(fd_, -1), what));
}

}  // namespace spool::net
