#include "spool/net/socket_addr.hpp"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>
#include <stdexcept>

namespace spool::net {

namespace {

[[noreturn]] void bad_address(std::string_view text, const char* why) {
  throw std::invalid_argument("spool::net::SocketAddr: '" + std::string(text) + "' " + why);
}

constexpr const char* kNotNumeric =
    "is not a numeric IPv4 or IPv6 address with a port (for a host name, use "
    "spool::net::lookup_host)";

}  // namespace

SocketAddr::SocketAddr() noexcept : storage_{} {
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage_);
  v4->sin_family = AF_INET;
}

SocketAddr::SocketAddr(std::string_view ip, std::uint16_t port) : storage_{} {
  if (!assign(ip, port)) bad_address(ip, kNotNumeric);
}

bool SocketAddr::assign(std::string_view ip, std::uint16_t port) noexcept {
  char text[INET6_ADDRSTRLEN + 1] = {};
  // A NUL would end the text for inet_pton: "1.2.3.4\0x" is no address.
  if (ip.size() >= sizeof text || ip.find('\0') != std::string_view::npos) return false;
  ip.copy(text, ip.size());
  storage_ = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage_);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage_);
  if (::inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    return true;
  }
  if (::inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    return true;
  }
  return false;
}

SocketAddr::SocketAddr(const sockaddr* addr, socklen_t len) : storage_{} {
  if ((addr->sa_family != AF_INET && addr->sa_family != AF_INET6) || len > sizeof storage_) {
    throw std::invalid_argument(
        "spool::net::SocketAddr: only AF_INET and AF_INET6 addresses are socket addresses");
  }
  std::memcpy(&storage_, addr, len);
}

SocketAddr SocketAddr::parse(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos)
    bad_address(text, "has no port (expected ip:port or [ip]:port)");
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    bad_address(text, "is an IPv6 address without brackets (expected [ip]:port)");
  }
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port > 65535 ||
      port_text.empty()) {
    bad_address(text, "has no valid port (expected a number from 0 to 65535 after the last ':')");
  }
  SocketAddr addr;
  if (!addr.assign(host, static_cast<std::uint16_t>(port))) bad_address(text, kNotNumeric);
  return addr;
}

std::uint16_t SocketAddr::port() const noexcept {
  return is_ipv6() ? ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port)
                   : ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
}

std::string SocketAddr::ip() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (is_ipv6()) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, buf,
                sizeof buf);
  } else {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf,
                sizeof buf);
  }
  return buf;
}

std::string SocketAddr::to_string() const {
  const std::string port_text = std::to_string(port());
  return is_ipv6() ? "[" + ip() + "]:" + port_text : ip() + ":" + port_text;
}

socklen_t SocketAddr::size() const noexcept {
  return is_ipv6() ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

bool operator==(const SocketAddr& a, const SocketAddr& b) noexcept {
  return a.storage_.ss_family == b.storage_.ss_family && a.port() == b.port() && a.ip() == b.ip();
}

}  // namespace spool::net
