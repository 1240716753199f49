// UdpSocket and its datagram futures.
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
#include "spool/coop.hpp"

namespace spool::net {

namespace {

struct SendArgs {
  const void* data;
  std::size_t len;
  const SocketAddr* to;  // null: the connected peer
};

long sendto_op(int fd, void* arg) {
  const auto* a = static_cast<SendArgs*>(arg);
  return ::sendto(fd, a->data, a->len, MSG_NOSIGNAL, a->to ? a->to->data() : nullptr,
                  a->to ? a->to->size() : 0);
}

struct RecvArgs {
  void* data;
  std::size_t len;
  sockaddr_storage from{};
  socklen_t from_len = sizeof from;
};

long recvfrom_op(int fd, void* arg) {
  auto* a = static_cast<RecvArgs*>(arg);
  a->from_len = sizeof a->from;
  return ::recvfrom(fd, a->data, a->len, 0, reinterpret_cast<sockaddr*>(&a->from), &a->from_len);
}

SocketAddr address_of(const detail::IoSource& s, int (*get)(int, sockaddr*, socklen_t*),
                      const char* what) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (get(s.fd(), reinterpret_cast<sockaddr*>(&ss), &len) != 0) s.throw_error(errno, what);
  return SocketAddr(reinterpret_cast<const sockaddr*>(&ss), len);
}

}  // namespace

Poll<std::size_t> SendDatagramFuture::poll(Context& cx) {
  if (!detail::coop_poll_proceed(cx)) return pending;
  SendArgs a{data_, len_, has_to_ ? &to_ : nullptr};
  const Poll<long> r =
      source_->poll_io(cx, waiter_, detail::IoSource::Direction::kWrite, sendto_op, &a);
  if (r.is_pending()) return pending;
  if (r.value() < 0) {
    const int err = static_cast<int>(-r.value());
    if (!has_to_) source_->throw_error(err, what_);
    throw std::system_error(err, std::generic_category(),
                            std::string(what_) + " " + to_.to_string());
  }
  return Poll<std::size_t>::ready(static_cast<std::size_t>(r.value()));
}

Poll<std::pair<std::size_t, SocketAddr>> RecvDatagramFuture::poll(Context& cx) {
  if (!detail::coop_poll_proceed(cx)) return pending;
  RecvArgs a{data_, len_};
  const Poll<long> r =
      source_->poll_io(cx, waiter_, detail::IoSource::Direction::kRead, recvfrom_op, &a);
  if (r.is_pending()) return pending;
  if (r.value() < 0) source_->throw_error(static_cast<int>(-r.value()), what_);
  return Poll<std::pair<std::size_t, SocketAddr>>::ready(
      static_cast<std::size_t>(r.value()),
      SocketAddr(reinterpret_cast<const sockaddr*>(&a.from), a.from_len));
}

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
  if (::connect(source_.fd(), addr.data(), addr.size()) != 0) {
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
