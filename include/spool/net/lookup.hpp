// spool::net::lookup_host: name resolution that never blocks a worker.
#pragma once

#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "spool/core/task.hpp"
#include "spool/net/socket_addr.hpp"

namespace spool::net {

/// The error category of getaddrinfo's codes (EAI_NONAME, EAI_AGAIN...): a failed
/// lookup_host throws std::system_error with it.
SPOOL_API const std::error_category& resolver_category() noexcept;

/// Resolves `host` ("localhost", "example.org", or a numeric address) to the socket
/// addresses of `port`, in getaddrinfo's order. getaddrinfo blocks, so it runs on the
/// blocking pool of the current runtime (on a thread of its own outside every runtime);
/// the awaiting task only waits. A numeric address needs no lookup and is ready at once.
/// Throws std::system_error (resolver_category) naming the host when it cannot be resolved.
SPOOL_API Task<std::vector<SocketAddr>> lookup_host(std::string host, std::uint16_t port);
/// lookup_host with "host:port" or "[v6]:port" text. Throws std::invalid_argument when the
/// port is missing or not a number.
SPOOL_API Task<std::vector<SocketAddr>> lookup_host(std::string host_and_port);

}  // namespace spool::net
