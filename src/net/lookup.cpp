// lookup_host: getaddrinfo off the workers (runtime/off_thread.hpp).
#include "spool/net/lookup.hpp"

#include <netdb.h>

#include <charconv>
#include <stdexcept>
#include <utility>

#include "runtime/off_thread.hpp"

namespace spool::net {

namespace {

class ResolverCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "getaddrinfo"; }
  std::string message(int code) const override { return ::gai_strerror(code); }
};

// What a lookup gives: the addresses, or getaddrinfo's error code (and errno for EAI_SYSTEM).
struct Resolved {
  std::vector<SocketAddr> addrs;
  int gai_error = 0;
  int sys_errno = 0;
};

Resolved resolve(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;  // one entry per address, not one per socket type
  addrinfo* list = nullptr;
  Resolved r;
  r.gai_error = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
  if (r.gai_error == EAI_SYSTEM) r.sys_errno = errno;
  for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET || a->ai_family == AF_INET6) {
      r.addrs.emplace_back(a->ai_addr, a->ai_addrlen);
    }
  }
  if (list != nullptr) ::freeaddrinfo(list);
  return r;
}

}  // namespace

const std::error_category& resolver_category() noexcept {
  static const ResolverCategory category;
  return category;
}

Task<std::vector<SocketAddr>> lookup_host(std::string host, std::uint16_t port) {
  if (host.find('\0') != std::string::npos) {  // getaddrinfo would look up what precedes it
    throw std::invalid_argument(
        "spool::net::lookup_host: the host name holds a NUL byte (at "
        "byte " +
        std::to_string(host.find('\0')) + "); remove it");
  }
  const std::string bare = host.size() >= 2 && host.front() == '[' && host.back() == ']'
                               ? host.substr(1, host.size() - 2)
                               : host;
  try {
    co_return std::vector<SocketAddr>{SocketAddr(bare, port)};  // numeric: no lookup
  } catch (const std::invalid_argument&) {
  }
  // A named closure: g++ 12 mis-copies a closure made inside the co_await expression (its
  // std::string capture then points into this frame; clang is right).
  auto job = [bare, port] { return resolve(bare, port); };
  Resolved r = co_await detail::off_thread(std::move(job));
  const std::string what = "spool::net::lookup_host(" + host + ")";
  if (r.gai_error == EAI_SYSTEM)
    throw std::system_error(r.sys_errno, std::generic_category(), what);
  if (r.gai_error != 0) throw std::system_error(r.gai_error, resolver_category(), what);
  if (r.addrs.empty()) {
    throw std::system_error(EAI_NONAME, resolver_category(), what + ": no IPv4 or IPv6 address");
  }
  co_return std::move(r.addrs);
}

Task<std::vector<SocketAddr>> lookup_host(std::string host_and_port) {
  const std::size_t colon = host_and_port.rfind(':');
  unsigned port = 0;
  const char* begin = host_and_port.data() + (colon == std::string::npos ? 0 : colon + 1);
  const char* end = host_and_port.data() + host_and_port.size();
  const auto [stop, ec] = std::from_chars(begin, end, port);
  if (colon == std::string::npos || ec != std::errc{} || stop != end || begin == end ||
      port > 65535) {
    throw std::invalid_argument("spool::net::lookup_host: '" + host_and_port +
                                "' is not host:port (a port from 0 to 65535 after the last ':')");
  }
  return lookup_host(host_and_port.substr(0, colon), static_cast<std::uint16_t>(port));
}

}  // namespace spool::net
