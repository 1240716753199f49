// spool::pipe and the pipe ends' adoption of descriptors made elsewhere.
#include "spool/io/pipe.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "driver/driver.hpp"
#include "runtime/current_driver.hpp"

namespace spool {

namespace {

constexpr detail::IoAdopt kPipe{.socket = false};

// What `fd` is, for from_fd's refusal.
std::string describe(const struct stat& st, int flags) {
  if (flags < 0) return std::string("not open (") + std::strerror(errno) + ")";
  if (!S_ISFIFO(st.st_mode)) return "no pipe or FIFO";
  return (flags & O_ACCMODE) == O_WRONLY ? "a pipe's write end" : "a pipe's read end";
}

// Checks that `fd` is a pipe open for `access` (O_RDONLY or O_WRONLY; O_RDWR does for
// both), makes it non-blocking and close-on-exec and registers it. `fd` is closed on a
// throw, unless it was not open.
detail::IoSource adopt(int fd, int access, const char* what) {
  std::shared_ptr<detail::Driver> driver;
  try {
    driver = detail::current_driver();  // (it may throw: a bad SPOOL_IO_BACKEND, no memory)
  } catch (...) {
    if (::fcntl(fd, F_GETFD) >= 0) ::close(fd);  // closed on a throw, as below
    throw;
  }
  // A descriptor a spool object owns already (taken twice) stays open: it is that object's.
  driver->io().refuse_registered(fd, what);
  struct stat st {};
  const int flags = ::fcntl(fd, F_GETFL);
  const bool open = flags >= 0 && ::fstat(fd, &st) == 0;
  const int mode = open ? flags & O_ACCMODE : -1;
  if (!open || !S_ISFIFO(st.st_mode) || (mode != access && mode != O_RDWR)) {
    const std::string is = describe(st, flags);
    if (flags >= 0) ::close(fd);
    throw std::invalid_argument(std::string(what) + ": descriptor " + std::to_string(fd) + " is " +
                                is + "; it takes a pipe's " +
                                (access == O_RDONLY ? "read" : "write") + " end");
  }
  if (::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 || ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(),
                            std::string(what) + ": making the descriptor non-blocking");
  }
  return detail::IoSource(std::move(driver), fd, what, kPipe);
}

}  // namespace

PipeReader PipeReader::from_fd(int fd) {
  return PipeReader(adopt(fd, O_RDONLY, "spool::PipeReader::from_fd"));
}

PipeWriter PipeWriter::from_fd(int fd) {
  return PipeWriter(adopt(fd, O_WRONLY, "spool::PipeWriter::from_fd"));
}

std::pair<PipeReader, PipeWriter> pipe() {
  constexpr const char* what = "spool::pipe";
  const auto& driver = detail::current_driver();  // before the pipe: it may throw
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), what);
  }
  auto [reader, writer] = detail::IoSource::adopt_pair(driver, fds, what, kPipe);
  return {PipeReader(std::move(reader)), PipeWriter(std::move(writer))};
}

}  // namespace spool
