// The fs operations of one system call each (fs_ops.hpp): on the worker's ring where the
// io_uring backend has one (ring_ops.hpp), else on the blocking pool; reads try the page
// cache inline first, and opens and metadata the kernel's caches (cached_lookup.hpp).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "fs/cached_lookup.hpp"
#include "fs/fs_ops.hpp"
#include "fs/ring_ops.hpp"
#include "fs/run_blocking.hpp"
#include "fs/stat_fields.hpp"
#include "runtime/shared.hpp"

namespace spool::detail::fs_ops {

// Each blocking job below is a named local, never a lambda written inside the co_await's
// operand: g++ 12 frees what such a lambda captured too early.

Task<Outcome<std::shared_ptr<FsFile>>> open(std::filesystem::path path, int flags, mode_t mode,
                                            bool readable, bool writable) {
  {
    // The owner first, as below: no allocation can fail while a bare descriptor is held.
    auto f = std::make_shared<FsFile>(-1, path, readable, writable);
    if (const auto cached = flags == O_RDONLY ? open_cached(path.c_str()) : std::nullopt) {
      f->fd.store(cached->fd, std::memory_order_relaxed);
      co_return Outcome<std::shared_ptr<FsFile>>{0, std::move(f)};
    }
    if (const long fd = co_await ring::open(path.string(), flags, mode); fd != ring::kNotOnRing) {
      if (fd < 0) co_return Outcome<std::shared_ptr<FsFile>>{static_cast<int>(-fd), {}};
      f->fd.store(static_cast<int>(fd), std::memory_order_relaxed);
      co_return Outcome<std::shared_ptr<FsFile>>{0, std::move(f)};
    }
  }
  auto job = [path = std::move(path), flags, mode, readable, writable]() mutable {
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
  };
  co_return co_await run_blocking(std::move(job));
}

Task<long> close(std::shared_ptr<FsFile> f) {
  if (const long r = co_await ring::close(f); r != ring::kNotOnRing) co_return r;
  auto job = [f = std::move(f)] {
    // Linux frees the descriptor even when close fails: never close it again.
    return sys(::close(f->fd.exchange(-1, std::memory_order_relaxed)));
  };
  co_return co_await run_blocking(std::move(job));
}

Task<long> read(FsFileUse f, std::span<std::byte> buf, std::int64_t offset, bool exact) {
  // What the page cache holds is read at once, on the polling thread: RWF_NOWAIT refuses
  // (EAGAIN) instead of waiting for a disk or a writer. Only the rest takes the pool.
  std::size_t have = 0;
  bool done_inline = false;
  while (have < buf.size()) {
    iovec iov{buf.data() + have, buf.size() - have};
    const long n = sys(::preadv2(f->descriptor(), &iov, 1,
                                 offset < 0 ? -1 : offset + static_cast<off_t>(have), RWF_NOWAIT));
    if (n == -EINTR) continue;
    if (n < 0 && have == 0 && n != -EAGAIN && n != -EOPNOTSUPP) co_return n;
    if (n < 0) break;  // the pool's call tries again and reports what it finds
    have += static_cast<std::size_t>(n);
    if (n == 0 || !exact) {
      done_inline = true;
      break;
    }
  }
  if (done_inline || have == buf.size()) {
    if (RuntimeShared* rt = current_runtime_ptr()) rt->count_fs_inline_read();
    co_return static_cast<long>(have);
  }
  // Then the ring, one read per kMaxTransfer, where there is one.
  while (have < buf.size()) {
    const long n = co_await ring::read(f, buf.subspan(have),
                                       offset < 0 ? -1 : offset + static_cast<off_t>(have));
    if (n == ring::kNotOnRing) break;
    if (n == -EINTR) continue;
    if (n < 0) co_return n;
    have += static_cast<std::size_t>(n);
    if (n == 0 || !exact) co_return static_cast<long>(have);
  }
  if (have == buf.size()) co_return static_cast<long>(have);
  buf = buf.subspan(have);
  if (offset >= 0) offset += static_cast<std::int64_t>(have);
  // The bytes land in a buffer of the call's own, copied out once the call ends: a dropped
  // call writes nothing into memory its caller may have freed.
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
  std::size_t done = 0;
  while (done < buf.size()) {
    const long n = co_await ring::write(f, buf.subspan(done),
                                        offset < 0 ? -1 : offset + static_cast<off_t>(done));
    if (n == ring::kNotOnRing) break;
    if (n == -EINTR) continue;
    if (n < 0) co_return n;  // (after a partial write_all too: the error is the news)
    done += static_cast<std::size_t>(n);
    if (!all) co_return static_cast<long>(done);
  }
  if (done == buf.size()) co_return static_cast<long>(done);
  buf = buf.subspan(done);
  auto job = [f = std::move(f), data = std::vector<std::byte>(buf.begin(), buf.end()),
              offset = offset < 0 ? offset : offset + static_cast<std::int64_t>(done),
              all]() -> long {
    std::size_t sent = 0;
    while (sent < data.size()) {
      const std::size_t want = data.size() - sent;
      const std::byte* at = data.data() + sent;
      const long n =
          offset < 0 ? sys(::write(f->descriptor(), at, want))
                     : sys(::pwrite(f->descriptor(), at, want, offset + static_cast<off_t>(sent)));
      if (n == -EINTR) continue;
      if (n < 0) return n;  // (after a partial write_all too: the error is the news)
      sent += static_cast<std::size_t>(n);
      if (!all) break;
    }
    return static_cast<long>(sent);
  };
  const long rest = co_await run_blocking(std::move(job));
  co_return rest < 0 ? rest : rest + static_cast<long>(done);
}

Task<std::int64_t> seek(FsFileUse f, std::int64_t offset, int whence) {
  const int fd = f->descriptor();
  auto job = [f = std::move(f), offset, whence]() -> std::int64_t {
    const off_t at = ::lseek(f->descriptor(), offset, whence);
    return at < 0 ? -errno : at;
  };
  // On a local file system an lseek reads no disk and asks no server (a network one's
  // SEEK_END may ask for the size): it runs here, waiting at most for the position lock that
  // a call at the position on another thread holds (docs/fs.md, path 1).
  if (on_local_file_system(fd)) co_return job();
  co_return co_await run_blocking(std::move(job));
}

Task<long> truncate(FsFileUse f, std::uint64_t len) {
  return run_blocking([f = std::move(f), len] {
    return sys(::ftruncate(f->descriptor(), static_cast<off_t>(len)));
  });
}

Task<long> sync(FsFileUse f, bool data_only) {
  if (const long r = co_await ring::sync(f, data_only); r != ring::kNotOnRing) co_return r;
  auto job = [f = std::move(f), data_only] {
    return sys(data_only ? ::fdatasync(f->descriptor()) : ::fsync(f->descriptor()));
  };
  co_return co_await run_blocking(std::move(job));
}

Task<long> allocate(FsFileUse f, std::uint64_t offset, std::uint64_t len) {
  if (const long r = co_await ring::allocate(f, offset, len); r != ring::kNotOnRing) co_return r;
  auto job = [f = std::move(f), offset, len] {
    return sys(
        ::fallocate(f->descriptor(), 0, static_cast<off_t>(offset), static_cast<off_t>(len)));
  };
  co_return co_await run_blocking(std::move(job));
}

Task<Outcome<fs::Metadata::Fields>> stat_fd(FsFileUse f) {
  if (auto st = exact_cached_stat(f->descriptor())) co_return {0, *st};  // no hop at all
  Outcome<fs::Metadata::Fields> out;
  if (const long r = co_await ring::stat_fd(f, &out.value); r != ring::kNotOnRing) {
    out.err = static_cast<int>(-r);
    co_return out;
  }
  // The job named first: g++ 12 destroys a lambda temporary of a co_await's operand twice.
  auto job = [f = std::move(f)] {
    struct stat st {};
    if (::fstat(f->descriptor(), &st) != 0) return Outcome<fs::Metadata::Fields>{errno, {}};
    return Outcome<fs::Metadata::Fields>{0, stat_fields(st)};
  };
  co_return co_await run_blocking(std::move(job));
}

Task<Outcome<fs::Metadata::Fields>> stat_path(std::string path, bool follow) {
  if (auto st = exact_cached_stat(path.c_str(), follow)) co_return {0, *st};  // no hop at all
  Outcome<fs::Metadata::Fields> out;
  if (const long r = co_await ring::stat_path(path, follow, &out.value); r != ring::kNotOnRing) {
    out.err = static_cast<int>(-r);
    co_return out;
  }
  auto job = [path = std::move(path), follow] {  // named first, as in stat_fd
    struct stat st {};
    const int r = follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
    if (r != 0) return Outcome<fs::Metadata::Fields>{errno, {}};
    return Outcome<fs::Metadata::Fields>{0, stat_fields(st)};
  };
  co_return co_await run_blocking(std::move(job));
}

Task<long> rename(std::string from, std::string to) {
  if (const long r = co_await ring::rename(from, to); r != ring::kNotOnRing) co_return r;
  auto job = [from = std::move(from), to = std::move(to)] {
    return sys(::rename(from.c_str(), to.c_str()));
  };
  co_return co_await run_blocking(std::move(job));
}

Task<long> unlink(std::string path) {
  if (const long r = co_await ring::unlink(path, false); r != ring::kNotOnRing) co_return r;
  auto job = [path = std::move(path)] { return sys(::unlink(path.c_str())); };
  co_return co_await run_blocking(std::move(job));
}

Task<long> mkdir(std::string path, mode_t mode) {
  if (const long r = co_await ring::mkdir(path, mode); r != ring::kNotOnRing) co_return r;
  auto job = [path = std::move(path), mode] { return sys(::mkdir(path.c_str(), mode)); };
  co_return co_await run_blocking(std::move(job));
}

Task<long> rmdir(std::string path) {
  if (const long r = co_await ring::unlink(path, true); r != ring::kNotOnRing) co_return r;
  auto job = [path = std::move(path)] { return sys(::rmdir(path.c_str())); };
  co_return co_await run_blocking(std::move(job));
}

Task<long> link(std::string original, std::string link) {
  if (const long r = co_await ring::link(original, link); r != ring::kNotOnRing) co_return r;
  auto job = [original = std::move(original), link = std::move(link)] {
    return sys(::link(original.c_str(), link.c_str()));
  };
  co_return co_await run_blocking(std::move(job));
}

Task<long> symlink(std::string original, std::string link) {
  if (const long r = co_await ring::symlink(original, link); r != ring::kNotOnRing) co_return r;
  auto job = [original = std::move(original), link = std::move(link)] {
    return sys(::symlink(original.c_str(), link.c_str()));
  };
  co_return co_await run_blocking(std::move(job));
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
