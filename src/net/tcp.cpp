// TcpListener, TcpStream and their futures.
#include "spool/net/tcp.hpp"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "runtime/current_driver.hpp"
#include "spool/net/lookup.hpp"

namespace spool::net {

namespace {

constexpr int kBacklog = 1024;

[[noreturn]] void throw_errno(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

// A new non-blocking TCP socket for `addr`'s family.
int tcp_socket(const SocketAddr& addr, const std::string& what) {
  const int fd =
      ::socket(addr.is_ipv6() ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno(errno, what + ": socket");
  return fd;
}

SocketAddr address_of(int fd, int (*get)(int, sockaddr*, socklen_t*), const char* what) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (get(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) throw_errno(errno, what);
  return SocketAddr(reinterpret_cast<const sockaddr*>(&ss), len);
}

// "a, b, c": the addresses a connect tried, for its error message.
std::string joined(const std::vector<SocketAddr>& addrs) {
  std::string out;
  for (const SocketAddr& a : addrs) out += (out.empty() ? "" : ", ") + a.to_string();
  return out;
}

}  // namespace

ConnectFuture<TcpStream> TcpStream::connect(const SocketAddr& addr) {
  sockaddr_storage ss{};
  std::memcpy(&ss, addr.data(), addr.size());
  return ConnectFuture<TcpStream>(
      detail::Connecting(detail::current_driver(), ss, addr.size(),
                         "spool::net::TcpStream::connect to " + addr.to_string()));
}

Task<TcpStream> TcpStream::connect(std::vector<SocketAddr> addrs) {
  if (addrs.empty()) {
    throw std::invalid_argument("spool::net::TcpStream::connect: no address to connect to");
  }
  std::error_code last;
  for (const SocketAddr& addr : addrs) {
    try {
      co_return co_await connect(addr);
    } catch (const std::system_error& e) {
      last = e.code();  // the next address may accept
    }
  }
  throw std::system_error(last,
                          "spool::net::TcpStream::connect to " + joined(addrs) + " (each in turn)");
}

Task<TcpStream> TcpStream::connect_to_host(std::string host_and_port) {
  const std::vector<SocketAddr> addrs = co_await lookup_host(host_and_port);
  try {
    co_return co_await connect(addrs);
  } catch (const std::system_error& e) {
    throw std::system_error(e.code(), "spool::net::TcpStream::connect to " + host_and_port + " (" +
                                          joined(addrs) + ", each in turn)");
  }
}

SocketAddr TcpStream::peer_of(const detail::Accepted& a) {
  return SocketAddr(reinterpret_cast<const sockaddr*>(&a.peer), a.peer_len);
}

TcpListener TcpListener::bind(const SocketAddr& addr) {
  const std::string what = "spool::net::TcpListener::bind to " + addr.to_string();
  const int fd = tcp_socket(addr, what);
  const int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd, addr.data(), addr.size()) != 0 || ::listen(fd, kBacklog) != 0) {
    const int err = errno;
    ::close(fd);
    throw_errno(err, what);
  }
  return TcpListener(
      detail::IoSource(detail::current_driver(), fd, "spool::net::TcpListener::bind"));
}

SocketAddr TcpListener::local_addr() const {
  return address_of(source_.fd(), ::getsockname, "spool::net::TcpListener::local_addr");
}

void TcpStream::shutdown(int how) {
  if (::shutdown(source_.fd(), how) != 0)
    source_.throw_error(errno, "spool::net::TcpStream::shutdown");
}

void TcpStream::set_nodelay(bool on) {
  const int v = on ? 1 : 0;
  if (::setsockopt(source_.fd(), IPPROTO_TCP, TCP_NODELAY, &v, sizeof v) != 0) {
    source_.throw_error(errno, "spool::net::TcpStream::set_nodelay");
  }
}

bool TcpStream::nodelay() const {
  int v = 0;
  socklen_t len = sizeof v;
  if (::getsockopt(source_.fd(), IPPROTO_TCP, TCP_NODELAY, &v, &len) != 0) {
    source_.throw_error(errno, "spool::net::TcpStream::nodelay");
  }
  return v != 0;
}

SocketAddr TcpStream::peer_addr() const {
  return address_of(source_.fd(), ::getpeername, "spool::net::TcpStream::peer_addr");
}

SocketAddr TcpStream::local_addr() const {
  return address_of(source_.fd(), ::getsockname, "spool::net::TcpStream::local_addr");
}

}  // namespace spool::net
