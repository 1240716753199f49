// The time to live of an IP socket's packets, for TcpStream and UdpSocket alike.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <utility>

#include "spool/detail/io_source.hpp"

namespace spool::detail {

// The level and name of the option: IP_TTL, or IPV6_UNICAST_HOPS on an IPv6 socket.
inline std::pair<int, int> ttl_option(const IoSource& s, const char* what) {
  const int domain = s.option<int>(SOL_SOCKET, SO_DOMAIN, what);
  return domain == AF_INET6 ? std::pair{IPPROTO_IPV6, IPV6_UNICAST_HOPS}
                            : std::pair{IPPROTO_IP, IP_TTL};
}

inline void set_ip_ttl(const IoSource& s, int ttl, const char* what) {
  const auto [level, name] = ttl_option(s, what);
  s.set_option(level, name, ttl, what);
}

inline int ip_ttl(const IoSource& s, const char* what) {
  const auto [level, name] = ttl_option(s, what);
  return s.option<int>(level, name, what);
}

}  // namespace spool::detail
