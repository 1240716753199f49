// spool::net::SocketAddr: an IPv4 or IPv6 address with a port.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "spool/config.hpp"

namespace spool::net {

/// An IPv4 or IPv6 socket address (an IP and a port), as the socket calls take it. Parsed
/// from numeric text only ("127.0.0.1:6379", "[::1]:80"): a host name needs
/// spool::net::lookup_host, which never blocks a worker.
class SPOOL_API SocketAddr {
 public:
  /// 0.0.0.0:0.
  SocketAddr() noexcept;
  /// Parses "a.b.c.d:port" or "[v6]:port". Throws std::invalid_argument naming the text and
  /// the expected form when it is neither.
  static SocketAddr parse(std::string_view text);
  /// `ip` (numeric IPv4 or IPv6 text, without brackets) with `port`. Throws
  /// std::invalid_argument when `ip` is not numeric.
  SocketAddr(std::string_view ip, std::uint16_t port);
  /// From a sockaddr of family AF_INET or AF_INET6 (`len` bytes). Throws
  /// std::invalid_argument for another family.
  SocketAddr(const sockaddr* addr, socklen_t len);

  /// The port.
  std::uint16_t port() const noexcept;
  /// True for an IPv6 address.
  bool is_ipv6() const noexcept { return storage_.ss_family == AF_INET6; }
  /// The IP as text ("127.0.0.1", "::1").
  std::string ip() const;
  /// "ip:port", with the IPv6 form in brackets ("[::1]:80").
  std::string to_string() const;

  /// For the socket calls: the address and its length.
  const sockaddr* data() const noexcept { return reinterpret_cast<const sockaddr*>(&storage_); }
  /// The length of data().
  socklen_t size() const noexcept;

  /// Same family, IP and port.
  friend SPOOL_API bool operator==(const SocketAddr& a, const SocketAddr& b) noexcept;

 private:
  // Sets the IP from numeric text and the port; false when `ip` is not numeric.
  bool assign(std::string_view ip, std::uint16_t port) noexcept;
  sockaddr_storage storage_;
};

}  // namespace spool::net
