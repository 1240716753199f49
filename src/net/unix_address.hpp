// The sockaddr_un of a path, and the path of a sockaddr_un: what the Unix sockets share.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace spool::detail {

// The sockaddr_un of `path` and its length; throws std::invalid_argument when it is empty,
// does not fit, or holds a NUL byte (the kernel would end the path there: another socket).
inline socklen_t unix_address(std::string_view path, sockaddr_storage& ss, const char* what) {
  auto* un = reinterpret_cast<sockaddr_un*>(&ss);
  if (path.empty() || path.size() >= sizeof un->sun_path) {
    throw std::invalid_argument(std::string(what) + ": the path '" + std::string(path) +
                                "' must have 1 to " + std::to_string(sizeof un->sun_path - 1) +
                                " bytes");
  }
  if (path.find('\0') != std::string_view::npos) {
    throw std::invalid_argument(std::string(what) + ": the path holds a NUL byte (at byte " +
                                std::to_string(path.find('\0')) +
                                "), where the kernel would end it: remove the NUL (abstract "
                                "socket addresses are not supported)");
  }
  ss = {};
  un->sun_family = AF_UNIX;
  path.copy(un->sun_path, path.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
}

// The path of a Unix socket address ("" when unnamed).
inline std::string path_of(const sockaddr_storage& ss, socklen_t len) {
  const auto* un = reinterpret_cast<const sockaddr_un*>(&ss);
  const std::size_t base = offsetof(sockaddr_un, sun_path);
  if (len <= base || un->sun_path[0] == '\0') return "";
  return std::string(un->sun_path, ::strnlen(un->sun_path, len - base));
}

}  // namespace spool::detail
