// TcpListener, TcpStream and their futures.
#include "spool/net/tcp.hpp"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "net/ip_ttl.hpp"
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
  return connect_fd(-1, addr, "spool::net::TcpStream::connect");
}

ConnectFuture<TcpStream> TcpStream::connect_fd(int fd, const SocketAddr& addr, const char* what) {
  sockaddr_storage ss{};
  std::memcpy(&ss, addr.data(), addr.size());
  std::string message = std::string(what) + " to " + addr.to_string();
  std::shared_ptr<detail::Driver> driver = detail::current_driver();
  return ConnectFuture<TcpStream>(
      detail::Connecting(std::move(driver), fd, ss, addr.size(), std::move(message)));
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
  std::shared_ptr<detail::Driver> driver = detail::current_driver();  // before the socket
  const int fd = tcp_socket(addr, what);
  const int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd, addr.data(), addr.size()) != 0 || ::listen(fd, kBacklog) != 0) {
    const int err = errno;
    ::close(fd);
    throw_errno(err, what);
  }
  return TcpListener(detail::IoSource(std::move(driver), fd, "spool::net::TcpListener::bind"));
}

SocketAddr TcpListener::local_addr() const {
  return address_of(source_.open_fd(), ::getsockname, "spool::net::TcpListener::local_addr");
}

void TcpStream::shutdown(int how) {
  if (::shutdown(source_.open_fd(), how) != 0)
    source_.throw_error(errno, "spool::net::TcpStream::shutdown");
}

TcpStream TcpStream::from_fd(int fd) {
  return TcpStream(
      detail::IoSource::from_fd(fd, {false, SOCK_STREAM, false}, "spool::net::TcpStream::from_fd"));
}

TcpListener TcpListener::from_fd(int fd) {
  return TcpListener(detail::IoSource::from_fd(fd, {false, SOCK_STREAM, true},
                                               "spool::net::TcpListener::from_fd"));
}

void TcpStream::set_nodelay(bool on) {
  source_.set_option(IPPROTO_TCP, TCP_NODELAY, on ? 1 : 0, "spool::net::TcpStream::set_nodelay");
}

bool TcpStream::nodelay() const {
  return source_.option<int>(IPPROTO_TCP, TCP_NODELAY, "spool::net::TcpStream::nodelay") != 0;
}

void TcpStream::set_ttl(int ttl) {
  detail::set_ip_ttl(source_, ttl, "spool::net::TcpStream::set_ttl");
}

int TcpStream::ttl() const { return detail::ip_ttl(source_, "spool::net::TcpStream::ttl"); }

void TcpStream::set_linger(std::optional<std::chrono::seconds> linger) {
  if (linger.has_value() && linger->count() != 0) {
    throw std::invalid_argument(
        "spool::net::TcpStream::set_linger(" + std::to_string(linger->count()) +
        " s): only 0 (reset on close) or std::nullopt (close in the background) are allowed; "
        "a longer linger would block the runtime's thread in close() for that long");
  }
  ::linger l{};
  l.l_onoff = linger.has_value() ? 1 : 0;
  l.l_linger = linger.has_value() ? static_cast<int>(linger->count()) : 0;
  source_.set_option(SOL_SOCKET, SO_LINGER, l, "spool::net::TcpStream::set_linger");
}

std::optional<std::chrono::seconds> TcpStream::linger() const {
  const auto l = source_.option<::linger>(SOL_SOCKET, SO_LINGER, "spool::net::TcpStream::linger");
  if (l.l_onoff == 0) return std::nullopt;
  return std::chrono::seconds(l.l_linger);
}

SocketAddr TcpStream::peer_addr() const {
  return address_of(source_.open_fd(), ::getpeername, "spool::net::TcpStream::peer_addr");
}

SocketAddr TcpStream::local_addr() const {
  return address_of(source_.open_fd(), ::getsockname, "spool::net::TcpStream::local_addr");
}

}  // namespace spool::net
