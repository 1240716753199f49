// The time to live of an IP socket's packets, for TcpStream and UdpSocket alike.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <stdexcept>
#include <string>

#include "spool/detail/io_source.hpp"

namespace spool::detail {

// IP_TTL, and the hop limit too on an IPv6 socket (whose IPv4-mapped peers use IP_TTL).
inline void set_ip_ttl(const IoSource& s, int ttl, const char* what) {
  if (ttl < 1 || ttl > 255) {
    throw std::invalid_argument(std::string(what) + "(" + std::to_string(ttl) +
                                "): a time to live is 1 to 255 hops");
  }
  if (s.option<int>(SOL_SOCKET, SO_DOMAIN, what) == AF_INET6) {
    s.set_option(IPPROTO_IPV6, IPV6_UNICAST_HOPS, ttl, what);
  }
  s.set_option(IPPROTO_IP, IP_TTL, ttl, what);
}

// The time to live: the hop limit on an IPv6 socket.
inline int ip_ttl(const IoSource& s, const char* what) {
  return s.option<int>(SOL_SOCKET, SO_DOMAIN, what) == AF_INET6
             ? s.option<int>(IPPROTO_IPV6, IPV6_UNICAST_HOPS, what)
             : s.option<int>(IPPROTO_IP, IP_TTL, what);
}

}  // namespace spool::detail
