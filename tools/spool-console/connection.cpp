#include "connection.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace spool_console {

Connection::Connection(const std::string& path, int interval_ms) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error("spool-console: " + path + ": not a usable socket path");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    if (fd_ >= 0) ::close(fd_);
    throw std::runtime_error("spool-console: cannot connect to " + path + ": " +
                             std::strerror(err) +
                             " (is the program running, with Builder::console or SPOOL_CONSOLE?)");
  }
  const std::string request = "{\"v\":1,\"interval_ms\":" + std::to_string(interval_ms) + "}\n";
  if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    const int err = errno;
    ::close(fd_);
    throw std::runtime_error("spool-console: cannot send the request: " +
                             std::string(std::strerror(err)));
  }
}

Connection::~Connection() { ::close(fd_); }

bool Connection::receive() {
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return false;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  }
}

std::optional<std::string> Connection::next_line() {
  const std::size_t nl = buffer_.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  std::string line = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  return line;
}

std::optional<std::string> Connection::wait_line() {
  for (;;) {
    if (auto line = next_line()) return line;
    char chunk[65536];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace spool_console
