// The fs operations that are whole jobs (fs_ops.hpp). A cached local file's whole read runs on
// the polling thread (cached_lookup.hpp); where that thread has a ring, another whole read and
// create_dir_all are chains of the ring's operations (the first, an openat or a mkdirat, says
// whether it has one); elsewhere, and for a whole write (which must run to its end) and the
// jobs made of calls io_uring does not offer (copy_file_range, getdents), one blocking call
// each.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <system_error>

#include "fs/cached_lookup.hpp"
#include "fs/fs_ops.hpp"
#include "fs/ring_ops.hpp"
#include "fs/run_blocking.hpp"

namespace spool::detail::fs_ops {

namespace {

// A descriptor closed when the job ends, however it ends.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Writes all of `len` bytes at `data` to `fd`: 0 or -errno.
long write_fully(int fd, const std::byte* data, std::size_t len) {
  while (len > 0) {
    const long n = sys(::write(fd, data, len));
    if (n == -EINTR) continue;
    if (n < 0) return n;
    data += n;
    len -= static_cast<std::size_t>(n);
  }
  return 0;
}

// Copies `from_fd` to its end into `to_fd` with read and write: the bytes, or -errno.
std::int64_t copy_by_reading(int from_fd, int to_fd, std::int64_t done) {
  std::vector<std::byte> buf(256 * 1024);
  for (;;) {
    const long n = sys(::read(from_fd, buf.data(), buf.size()));
    if (n == -EINTR) continue;
    if (n <= 0) return n < 0 ? n : done;
    if (const long w = write_fully(to_fd, buf.data(), static_cast<std::size_t>(n)); w < 0) return w;
    done += n;
  }
}

// Copies `from_fd` to its end into `to_fd`: copy_file_range while the kernel can (in the
// kernel, no bytes through user space), then read and write. The bytes, or -errno.
std::int64_t copy_fd(int from_fd, int to_fd) {
  std::int64_t done = 0;
  for (;;) {
    const ssize_t n = ::copy_file_range(from_fd, nullptr, to_fd, nullptr, 1 << 30, 0);
    // Some kernels copy nothing from procfs / sysfs files (their size says 0): at the start,
    // 0 is no proof of the end.
    if (n == 0) return done == 0 ? copy_by_reading(from_fd, to_fd, 0) : done;
    if (n > 0) {
      done += n;
      continue;
    }
    if (errno == EINTR) continue;
    // Not between these files (another file system before 5.3, a special file) or kernel.
    if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
        errno == EBADF) {
      return copy_by_reading(from_fd, to_fd, done);
    }
    return -errno;
  }
}

Task<Outcome<std::vector<std::byte>>> read_file_job(std::string path) {
  return run_blocking([path = std::move(path)] {
    using Out = Outcome<std::vector<std::byte>>;
    const FdGuard f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) return Out{errno, {}};
    // The size is a hint (a file in /proc says 0, a file may grow): read until read says 0.
    // One byte more than it says lets the first read go to the end and the second see it.
    struct stat st {};
    const bool sized = ::fstat(f.fd, &st) == 0 && st.st_size > 0;
    std::vector<std::byte> data(sized ? static_cast<std::size_t>(st.st_size) + 1 : 4096);
    std::size_t len = 0;
    for (;;) {
      if (len == data.size()) data.resize(data.size() * 2);
      const long n = sys(::read(f.fd, data.data() + len, data.size() - len));
      if (n == -EINTR) continue;
      if (n < 0) return Out{static_cast<int>(-n), {}};
      if (n == 0) break;
      len += static_cast<std::size_t>(n);
    }
    data.resize(len);
    return Out{0, std::move(data)};
  });
}

Task<long> mkdir_all_job(std::string path) {
  return run_blocking([path = std::move(path)]() -> long {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    return ec ? -ec.value() : 0;
  });
}

// The offset of a whole read's next call once `done` bytes came: explicit in a regular file,
// the file's position in a pipe, a FIFO or a tty (which have none: pread is ESPIPE there).
std::int64_t offset_after(bool regular, std::size_t done) {
  return regular ? static_cast<std::int64_t>(done) : -1;
}

// The rest of read_file once `f` is open: its bytes, the size a hint (a file in /proc says 0,
// a file may grow), until a read comes back short; then the close. `cached`: the metadata
// open_cached gave, and f a local file that its last owner closes, as a File's drop does
// (this thread, or a pool job that read the rest); nullopt: the ring opened f, and closes
// it. Dropped midway, it has done nothing but read.
Task<Outcome<std::vector<std::byte>>> read_opened(std::shared_ptr<FsFile> f,
                                                  std::optional<fs::Metadata::Fields> cached) {
  using Out = Outcome<std::vector<std::byte>>;
  const Outcome<fs::Metadata::Fields> st =
      cached ? Outcome<fs::Metadata::Fields>{0, *cached} : co_await stat_fd(FsFileUse(f));
  const bool regular = st.err == 0 && st.value.type == std::filesystem::file_type::regular;
  std::vector<std::byte> data(st.err == 0 && st.value.len > 0 ? st.value.len + 1 : 4096);
  std::size_t len = 0;
  int err = 0;
  for (;;) {
    if (len == data.size()) data.resize(data.size() * 2);
    const std::span<std::byte> rest = std::span(data).subspan(len);
    const long n = co_await read(FsFileUse(f), rest, offset_after(regular, len), true);
    if (n < 0) {
      err = static_cast<int>(-n);
      break;
    }
    len += static_cast<std::size_t>(n);
    if (static_cast<std::size_t>(n) < rest.size()) break;  // (an exact read stops at the end)
  }
  if (!cached)
    (void)co_await close(std::move(f));  // as the job: its error says nothing of the bytes
  if (err != 0) co_return Out{err, {}};
  data.resize(len);
  co_return Out{0, std::move(data)};
}

// What create_dir_all makes of an EEXIST for `path`, as std::filesystem::create_directories
// does: a directory (a symlink to one too) is no error; another file is ENOTDIR, but EEXIST
// where the path asked for ends in a separator (`trailing`: its first stat said ENOTDIR, so
// libstdc++ tries the mkdir); a dangling symlink EEXIST; a stat that fails otherwise its error.
Task<long> existing(std::string path, bool trailing) {
  const Outcome<fs::Metadata::Fields> st = co_await stat_path(std::move(path), true);
  if (st.err == ENOENT) co_return -EEXIST;
  if (st.err != 0) co_return -st.err;
  if (st.value.type == std::filesystem::file_type::directory) co_return 0;
  co_return trailing ? -EEXIST : -ENOTDIR;
}

// libstdc++'s create_directories refuses a path of more missing components than this before
// it makes any (ENAMETOOLONG).
constexpr int kMaxMissing = 1000;

// create_dir_all's chain from a mkdirat's answer `r` for `path`, `depth` levels below the
// path asked for: the parents first where that said ENOENT (none made until an existing one
// is found), then `path` again. The kernel resolves each path whole, "." and ".." after a
// symlink included, as create_directories' own mkdir calls do.
Task<long> mkdir_all_after(std::filesystem::path path, long r, int depth, bool trailing) {
  if (r == -ENOENT) {
    const std::filesystem::path parent = path.parent_path();
    if (parent.empty() || parent == path) co_return r;
    long made;
    if (depth + 1 < kMaxMissing) {
      made = co_await mkdir(parent.string(), 0777);
    } else {
      // The next would be missing component 1,001: refused, as nothing is made yet, if it is.
      const Outcome<fs::Metadata::Fields> st = co_await stat_path(parent.string(), true);
      if (st.err == ENOENT) co_return -ENAMETOOLONG;
      made = -EEXIST;  // (existing() reports what it is)
    }
    if (const long p = co_await mkdir_all_after(parent, made, depth + 1, false); p < 0) {
      co_return p;
    }
    r = co_await mkdir(path.string(), 0777);
  }
  if (r == -EEXIST) co_return co_await existing(path.string(), trailing && depth == 0);
  co_return r;
}

}  // namespace

Task<Outcome<std::vector<std::byte>>> read_file(std::string path) {
  auto f = std::make_shared<FsFile>(-1, path, true, false);  // the owner first, as open's
  if (const auto cached = open_cached(path.c_str())) {
    f->fd.store(cached->fd, std::memory_order_relaxed);
    co_return co_await read_opened(std::move(f), cached->fields);
  }
  const long fd = co_await ring::open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd == ring::kNotOnRing) co_return co_await read_file_job(std::move(path));
  if (fd < 0) co_return Outcome<std::vector<std::byte>>{static_cast<int>(-fd), {}};
  f->fd.store(static_cast<int>(fd), std::memory_order_relaxed);
  co_return co_await read_opened(std::move(f), std::nullopt);
}

// A file's whole write stays one job everywhere: dropped, or at a shutdown, it runs to its
// end (a chain on a ring, cancelled after its truncating open, would leave the file empty).
Task<long> write_file(std::string path, std::vector<std::byte> data) {
  return run_blocking([path = std::move(path), data = std::move(data)]() -> long {
    const FdGuard f{::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)};
    if (f.fd < 0) return -errno;
    return write_fully(f.fd, data.data(), data.size());
  });
}

// Dropped midway (or cancelled at a shutdown), the chain stops: the directories it made stay.
Task<long> mkdir_all(std::string path) {
  std::filesystem::path p(path);
  if (p.empty()) co_return -EINVAL;  // as create_directories
  const bool trailing = p.has_relative_path() && !p.has_filename();
  if (trailing) p = p.parent_path();
  const long r = co_await ring::mkdir(p.string(), 0777);
  if (r == ring::kNotOnRing) co_return co_await mkdir_all_job(std::move(path));
  co_return co_await mkdir_all_after(std::move(p), r, 0, trailing);
}

Task<Outcome<Copied>> copy_file(std::string from, std::string to) {
  return run_blocking([from = std::move(from), to = std::move(to)] {
    using Out = Outcome<Copied>;
    const auto refused = [](Copied::Refusal why) { return Out{EINVAL, {0, why}}; };
    // Anything but a regular file is refused unopened: opening a device, a socket or a FIFO
    // has effects of its own (a serial port's DTR, a lease broken, ENXIO for a socket).
    struct stat from_st {};
    if (::stat(from.c_str(), &from_st) != 0) return Out{errno, {}};
    if (S_ISDIR(from_st.st_mode)) return Out{EISDIR, {}};
    if (!S_ISREG(from_st.st_mode)) return refused(Copied::Refusal::kNotRegular);
    // The path may name another file by the open: fstat checks again what was opened.
    // O_NONBLOCK: a FIFO put there meanwhile is refused at once, not waited on for a writer.
    const FdGuard in{::open(from.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
    if (in.fd < 0) return Out{errno, {}};
    struct stat in_st {};
    if (::fstat(in.fd, &in_st) != 0) return Out{errno, {}};
    if (S_ISDIR(in_st.st_mode)) return Out{EISDIR, {}};
    if (!S_ISREG(in_st.st_mode)) return refused(Copied::Refusal::kNotRegular);
    const int in_flags = ::fcntl(in.fd, F_GETFL);
    if (in_flags < 0 || ::fcntl(in.fd, F_SETFL, in_flags & ~O_NONBLOCK) != 0) {
      return Out{errno, {}};
    }
    const mode_t perms = in_st.st_mode & 07777;
    // Not O_TRUNC: `to` may be `from` (the same path, a hard link, a symlink), checked first.
    const FdGuard out{::open(to.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, perms)};
    if (out.fd < 0) return Out{errno, {0, Copied::Refusal::kNone, true}};
    struct stat out_st {};
    if (::fstat(out.fd, &out_st) != 0) return Out{errno, {}};
    if (out_st.st_dev == in_st.st_dev && out_st.st_ino == in_st.st_ino) {
      return refused(Copied::Refusal::kSameFile);
    }
    // Only a regular `to` is emptied and given from's mode: /dev/null or a FIFO takes the
    // bytes as it is (ftruncate would fail with EINVAL, fchmod would change the device's mode).
    if (S_ISREG(out_st.st_mode)) {
      if (::ftruncate(out.fd, 0) != 0) return Out{errno, {}};
      // The umask applied at creation, and an existing `to` kept its own mode: set from's.
      if (::fchmod(out.fd, perms) != 0) return Out{errno, {}};
    }
    const std::int64_t n = copy_fd(in.fd, out.fd);
    if (n < 0) return Out{static_cast<int>(-n), {}};
    return Out{0, {static_cast<std::uint64_t>(n), Copied::Refusal::kNone}};
  });
}

Task<long> remove_all(std::string path) {
  // Trailing slashes make lstat follow a symlink ("link/" is the directory it points to),
  // and remove_all would then empty that directory before failing on the link.
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return run_blocking([path = std::move(path)]() -> long {
    const std::string_view last = std::string_view(path).substr(path.rfind('/') + 1);
    if (last == "." || last == "..") return -EINVAL;  // as rmdir(2): not the directory it names
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return -errno;
    if (!S_ISDIR(st.st_mode)) return -ENOTDIR;  // a file, or a symlink (not followed)
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    return ec ? -ec.value() : 0;
  });
}

}  // namespace spool::detail::fs_ops
