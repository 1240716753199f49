// spool-console's side of the socket: connects, subscribes, and hands back whole lines.
#pragma once

#include <optional>
#include <string>

namespace spool_console {

class Connection {
 public:
  // Connects to the console socket at `path` and asks for a snapshot every `interval_ms`
  // (0: one, then the server closes); throws std::runtime_error that says why it cannot.
  Connection(const std::string& path, int interval_ms);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  int fd() const noexcept { return fd_; }
  // Reads what the socket has (call when poll says it is readable); false at end of stream.
  bool receive();
  // The next whole line received, without its newline.
  std::optional<std::string> next_line();
  // Blocks until the next whole line; nullopt at end of stream.
  std::optional<std::string> wait_line();

 private:
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace spool_console
