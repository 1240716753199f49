// The fs operations of one system call each, on the blocking pool (fs_ops.hpp); reads try
// the page cache inline first.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "fs/fs_ops.hpp"
#include "fs/run_blocking.hpp"
#include "fs/stat_fields.hpp"

namespace spool::detail::fs_ops {

Task<Outcome<std::shared_ptr<FsFile>>> open(std::filesystem::path path, int flags, mode_t mode,
                                            bool readable, bool writable) {
  return run_blocking([path = std::move(path), flags, mode, readable, writable]() mutable {
    // The owner is made first and given the descriptor: a result nobody collects (a dropped
    // Task) closes it, and no allocation can fail while a bare descriptor is held.
    auto f = std::make_shared<FsFile>(-1, std::move(path), readable, writable);
    for (;;) {
      const long fd = sys(::open(f->path.c_str(), flags | O_CLOEXEC, mode));
      if (fd == -EINTR) continue;  // a FIFO's open waits for its peer, and a signal may end it
      if (fd < 0) return Outcome<std::shared_ptr<FsFile>>{static_cast<int>(-fd), {}};
      f->fd.store(static_cast<int>(fd), std::memory_order_relaxed);
      return Outcome<std::shared_ptr<FsFile>>{0, std::move(f)};
    }
  });
}

Task<long> close(std::shared_ptr<FsFile> f) {
  return run_blocking([f = std::move(f)] {
    // Linux frees the descriptor even when close fails: never close it again.
    return sys(::close(f->fd.exchange(-1, std::memory_order_relaxed)));
  });
}

Task<long> read(FsFileUse f, std::span<std::byte> buf, std::int64_t offset, bool exact) {
  // What the page cache holds is read at once, on the polling thread: RWF_NOWAIT refuses
  // (EAGAIN) instead of waiting for a disk or a writer. Only the rest takes the pool.
  std::size_t have = 0;
  while (have < buf.size()) {
    iovec iov{buf.data() + have, buf.size() - have};
    const long n = sys(::preadv2(f->descriptor(), &iov, 1,
                                 offset < 0 ? -1 : offset + static_cast<off_t>(have), RWF_NOWAIT));
    if (n == -EINTR) continue;
    if (n < 0 && have == 0 && n != -EAGAIN && n != -EOPNOTSUPP) co_return n;
    if (n < 0) break;  // the pool's call tries again and reports what it finds
    have += static_cast<std::size_t>(n);
    if (n == 0 || !exact) co_return static_cast<long>(have);
  }
  if (have == buf.size()) co_return static_cast<long>(have);
  buf = buf.subspan(have);
  if (offset >= 0) offset += static_cast<std::int64_t>(have);
  // The bytes land in a buffer of the call's own, copied out once the call ends: a dropped
  // call writes nothing into memory its caller may have freed.
  // (The job is a named local: g++ 12 frees a shared_ptr captured by a lambda written
  // inside the co_await's operand too early.)
  auto data = std::make_shared<std::vector<std::byte>>(buf.size());
  auto job = [f = std::move(f), data, offset, exact]() -> long {
    std::size_t done = 0;
    while (done < data->size()) {
      const std::size_t want = data->size() - done;
      std::byte* at = data->data() + done;
      const long n =
          offset < 0 ? sys(::read(f->descriptor(), at, want))
                     : sys(::pread(f->descriptor(), at, want, offset + static_cast<off_t>(done)));
      if (n == -EINTR) continue;
      if (n < 0) return n;
      done += static_cast<std::size_t>(n);
      if (n == 0 || !exact) break;
    }
    return static_cast<long>(done);
  };
  const long n = co_await run_blocking(std::move(job));
  if (n > 0) std::copy_n(data->begin(), n, buf.begin());
  co_return n < 0 ? n : n + static_cast<long>(have);
}

Task<long> write(FsFileUse f, std::span<const std::byte> buf, std::int64_t offset, bool all) {
  return run_blocking([f = std::move(f), data = std::vector<std::byte>(buf.begin(), buf.end()),
                       offset, all]() -> long {
    std::size_t done = 0;
    while (done < data.size()) {
      const std::size_t want = data.size() - done;
      const std::byte* at = data.data() + done;
      const long n =
          offset < 0 ? sys(::write(f->descriptor(), at, want))
                     : sys(::pwrite(f->descriptor(), at, want, offset + static_cast<off_t>(done)));
      if (n == -EINTR) continue;
      if (n < 0) return n;  // (after a partial write_all too: the error is the news)
      done += static_cast<std::size_t>(n);
      if (!all) break;
    }
    return static_cast<long>(done);
  });
}

Task<std::int64_t> seek(FsFileUse f, std::int64_t offset, int whence) {
  return run_blocking([f = std::move(f), offset, whence]() -> std::int64_t {
    const off_t at = ::lseek(f->descriptor(), offset, whence);
    return at < 0 ? -errno : at;
  });
}

Task<long> truncate(FsFileUse f, std::uint64_t len) {
  return run_blocking([f = std::move(f), len] {
    return sys(::ftruncate(f->descriptor(), static_cast<off_t>(len)));
  });
}

Task<long> sync(FsFileUse f, bool data_only) {
  return run_blocking([f = std::move(f), data_only] {
    return sys(data_only ? ::fdatasync(f->descriptor()) : ::fsync(f->descriptor()));
  });
}

Task<Outcome<fs::Metadata::Fields>> stat_fd(FsFileUse f) {
  return run_blocking([f = std::move(f)] {
    struct stat st {};
    if (::fstat(f->descriptor(), &st) != 0) return Outcome<fs::Metadata::Fields>{errno, {}};
    return Outcome<fs::Metadata::Fields>{0, stat_fields(st)};
  });
}

Task<Outcome<fs::Metadata::Fields>> stat_path(std::string path, bool follow) {
  return run_blocking([path = std::move(path), follow] {
    struct stat st {};
    const int r = follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
    if (r != 0) return Outcome<fs::Metadata::Fields>{errno, {}};
    return Outcome<fs::Metadata::Fields>{0, stat_fields(st)};
  });
}

Task<long> rename(std::string from, std::string to) {
  return run_blocking([from = std::move(from), to = std::move(to)] {
    return sys(::rename(from.c_str(), to.c_str()));
  });
}

Task<long> unlink(std::string path) {
  return run_blocking([path = std::move(path)] { return sys(::unlink(path.c_str())); });
}

Task<long> mkdir(std::string path, mode_t mode) {
  return run_blocking([path = std::move(path), mode] { return sys(::mkdir(path.c_str(), mode)); });
}

Task<long> rmdir(std::string path) {
  return run_blocking([path = std::move(path)] { return sys(::rmdir(path.c_str())); });
}

Task<long> link(std::string original, std::string link) {
  return run_blocking([original = std::move(original), link = std::move(link)] {
    return sys(::link(original.c_str(), link.c_str()));
  });
}

Task<long> symlink(std::string original, std::string link) {
  return run_blocking([original = std::move(original), link = std::move(link)] {
    return sys(::symlink(original.c_str(), link.c_str()));
  });
}

Task<long> chmod(std::string path, mode_t mode) {
  return run_blocking([path = std::move(path), mode] { return sys(::chmod(path.c_str(), mode)); });
}

Task<Outcome<std::string>> realpath(std::string path) {
  return run_blocking([path = std::move(path)] {
    std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(path.c_str(), nullptr),
                                                         &std::free);
    if (!resolved) return Outcome<std::string>{errno, {}};
    return Outcome<std::string>{0, resolved.get()};
  });
}

Task<Outcome<std::shared_ptr<FsDir>>> open_dir(std::string path) {
  return run_blocking([path = std::move(path)] {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return Outcome<std::shared_ptr<FsDir>>{errno, {}};
    return Outcome<std::shared_ptr<FsDir>>{0, std::make_shared<FsDir>(dir, path)};
  });
}

Task<long> read_dir_batch(std::shared_ptr<FsDir> d) {
  return run_blocking([d = std::move(d)] { return static_cast<long>(-d->fetch_batch()); });
}

}  // namespace spool::detail::fs_ops
