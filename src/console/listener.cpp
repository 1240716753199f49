#include "console/listener.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace spool::console {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw std::system_error(err, std::generic_category(),
                          "spool: console socket " + path + ": " + what);
}

sockaddr_un address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    fail("the path must be 1 to " + std::to_string(sizeof addr.sun_path - 1) + " bytes long", path,
         ENAMETOOLONG);
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// True when a process listens on the socket at `path`.
bool someone_listens(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const sockaddr_un addr = address(path);
  const bool live = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return live;
}

// Removes what a previous process left at `path`, or refuses: see Listener's constructor.
void clear_path(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    fail("cannot inspect the path", path, errno);
  }
  if (!S_ISSOCK(st.st_mode)) {
    throw std::invalid_argument("spool: console socket " + path +
                                ": the path exists and is not a socket; refusing to replace it "
                                "(remove it, or pick another path)");
  }
  if (someone_listens(path)) {
    throw std::invalid_argument("spool: console socket " + path +
                                ": a running program already serves a console there (pick "
                                "another path)");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    fail("cannot remove a stale socket", path, errno);
}

}  // namespace

Listener::Listener(const std::string& path) : path_(path) {
  (void)address(path);  // checks the length before anything is made
  clear_path(path);
  const std::size_t slash = path.rfind('/');
  std::string dir_template =
      (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + ".spool-XXXXXX";
  if (::mkdtemp(dir_template.data()) == nullptr)
    fail("cannot create a directory beside it", path, errno);
  const std::string private_path = dir_template + "/s";
  const auto cleanup_dir = [&] {
    ::unlink(private_path.c_str());
    ::rmdir(dir_template.c_str());
  };
  try {
    const sockaddr_un addr = address(private_path);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) fail("socket", path, errno);
    if (::bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      fail("bind", path, errno);
    }
    if (::chmod(private_path.c_str(), 0600) != 0) fail("chmod 0600", path, errno);
    if (::listen(fd_, 16) != 0) fail("listen", path, errno);
    struct stat st {};
    if (::stat(private_path.c_str(), &st) != 0) fail("stat", path, errno);
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    if (::rename(private_path.c_str(), path.c_str()) != 0) fail("rename into place", path, errno);
    ::rmdir(dir_template.c_str());
  } catch (...) {
    if (fd_ >= 0) ::close(fd_);
    cleanup_dir();
    throw;
  }
}

Listener::~Listener() {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    ::unlink(path_.c_str());
  }
  ::close(fd_);
}

}  // namespace spool::console
