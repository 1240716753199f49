// The console's listening socket: a Unix stream socket that only its owner can connect to.
#pragma once

#include <sys/types.h>
#include <string>

namespace spool::console {

// A listening socket at a path, and which file it is (to unlink only that one).
class Listener {
 public:
  // Listens at `path` with mode 0600 from the start: the socket is bound in a private 0700
  // directory beside `path`, made owner-only there, then renamed onto `path`. A socket left
  // at `path` by a process that exited is replaced; throws std::invalid_argument when `path`
  // exists and is not a socket, or is a socket a live process listens on, and
  // std::system_error (with the path) when the directory is missing, not writable, or the
  // path is too long for a Unix socket.
  explicit Listener(const std::string& path);
  // Closes the socket and unlinks the path, if it is still this socket.
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int fd() const noexcept { return fd_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  dev_t dev_ = 0;  // the socket file's device and inode, as bound
  ino_t ino_ = 0;
};

}  // namespace spool::console
