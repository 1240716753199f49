// spool::fs::File and OpenOptions: checks, then the operations of fs_ops.hpp.
#include "spool/fs/file.hpp"

#include <fcntl.h>

#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>

#include "fs/errors.hpp"
#include "fs/fs_ops.hpp"
#include "spool/net/io_error.hpp"

namespace spool::fs {

namespace {

// The open(2) flags of these options, or std::invalid_argument naming what is wrong.
int open_flags(bool read, bool write, bool append, bool truncate, bool create, bool create_new) {
  const bool writes = write || append;
  if (!read && !writes) {
    throw std::invalid_argument(
        "spool::fs::OpenOptions::open: no access mode is set; set read(true), write(true) or "
        "append(true)");
  }
  if (!writes && (truncate || create || create_new)) {
    throw std::invalid_argument(
        "spool::fs::OpenOptions::open: create, create_new and truncate need write(true) or "
        "append(true)");
  }
  if (append && truncate && !create_new) {
    throw std::invalid_argument(
        "spool::fs::OpenOptions::open: truncate and append together mean nothing; choose one");
  }
  int flags = read && writes ? O_RDWR : writes ? O_WRONLY : O_RDONLY;
  if (append) flags |= O_APPEND;
  if (create_new) return flags | O_CREAT | O_EXCL;
  if (create) flags |= O_CREAT;
  if (truncate) flags |= O_TRUNC;
  return flags;
}

const std::filesystem::path kNoPath;

// The bodies of File's calls: each takes the file (null when the File was not open), not
// `this`, so that its Task may outlive the File; a use of it (FsFileUse) but for close's.

// std::logic_error naming `call`, made on a File that is not open.
[[noreturn]] void throw_not_open(const char* call) {
  throw std::logic_error(std::string(call) +
                         ": the File is not open (closed, moved from, or default-made); open "
                         "one with spool::fs::File::open or OpenOptions::open");
}

// `f`, or throw_not_open when the File was not open.
const detail::FsFile& live(const detail::FsFileUse& f, const char* call) {
  if (!f) throw_not_open(call);
  return *f;
}

// std::system_error EBADF naming `call`, for a file opened without the `access` it needs.
[[noreturn]] void throw_no_access(const detail::FsFile& f, const char* call, const char* access,
                                  const char* option) {
  throw std::system_error(EBADF, std::generic_category(),
                          detail::fs_what(call, f.path) + ": the file was opened without " +
                              access + " access (open it with OpenOptions::" + option + ")");
}

Task<std::size_t> read_on(detail::FsFileUse f, std::span<std::byte> buf, std::int64_t offset,
                          bool exact) {
  const char* call = exact        ? "spool::fs::File::read_exact"
                     : offset < 0 ? "spool::fs::File::read"
                                  : "spool::fs::File::read_at";
  if (!live(f, call).readable) throw_no_access(*f, call, "read", "read(true)");
  const auto n = static_cast<std::size_t>(
      detail::fs_check(co_await detail::fs_ops::read(f, buf, offset, exact), call, f->path));
  if (exact && n < buf.size()) {
    throw net::UnexpectedEof(detail::fs_what(call, f->path) + ": the file ended after " +
                             std::to_string(n) + " of the " + std::to_string(buf.size()) +
                             " bytes wanted");
  }
  co_return n;
}

Task<std::size_t> write_on(detail::FsFileUse f, std::span<const std::byte> buf, std::int64_t offset,
                           bool all) {
  const char* call = all          ? "spool::fs::File::write_all"
                     : offset < 0 ? "spool::fs::File::write"
                                  : "spool::fs::File::write_at";
  if (!live(f, call).writable) throw_no_access(*f, call, "write", "write(true) or append(true)");
  co_return static_cast<std::size_t>(
      detail::fs_check(co_await detail::fs_ops::write(f, buf, offset, all), call, f->path));
}

Task<std::uint64_t> seek_on(detail::FsFileUse f, std::int64_t offset, SeekFrom from) {
  const char* call = "spool::fs::File::seek";
  live(f, call);
  const int whence = from == SeekFrom::kStart     ? SEEK_SET
                     : from == SeekFrom::kCurrent ? SEEK_CUR
                                                  : SEEK_END;
  const std::int64_t at = co_await detail::fs_ops::seek(f, offset, whence);
  co_return static_cast<std::uint64_t>(detail::fs_check(at, call, f->path));
}

Task<void> set_len_on(detail::FsFileUse f, std::uint64_t len) {
  const char* call = "spool::fs::File::set_len";
  if (!live(f, call).writable) throw_no_access(*f, call, "write", "write(true) or append(true)");
  detail::fs_check(co_await detail::fs_ops::truncate(f, len), call, f->path);
}

Task<void> allocate_on(detail::FsFileUse f, std::uint64_t offset, std::uint64_t len) {
  const char* call = "spool::fs::File::allocate";
  if (!live(f, call).writable) throw_no_access(*f, call, "write", "write(true) or append(true)");
  if (len == 0) co_return;  // nothing to reserve (fallocate(2) would answer EINVAL)
  detail::fs_check(co_await detail::fs_ops::allocate(f, offset, len), call, f->path);
}

Task<void> sync_on(detail::FsFileUse f, bool data_only) {
  const char* call = data_only ? "spool::fs::File::sync_data" : "spool::fs::File::sync_all";
  live(f, call);
  detail::fs_check(co_await detail::fs_ops::sync(f, data_only), call, f->path);
}

Task<Metadata> metadata_on(detail::FsFileUse f) {
  const char* call = "spool::fs::File::metadata";
  live(f, call);
  const auto st = co_await detail::fs_ops::stat_fd(f);
  if (st.err != 0) detail::throw_fs_error(st.err, call, f->path);
  co_return Metadata(st.value);
}

Task<void> close_on(std::shared_ptr<detail::FsFile> f) {
  const char* call = "spool::fs::File::close";
  if (!f) throw_not_open(call);
  // Calls not yet over still use the descriptor: the last of them closes it (FsFile's
  // destructor). Acquire: a 0 read here follows every call's release of it, so each
  // system call on fd happened before this close (fs_state.hpp).
  if (f->in_flight.load(std::memory_order_acquire) != 0) co_return;
  const std::filesystem::path path = f->path;
  detail::fs_check(co_await detail::fs_ops::close(std::move(f)), call, path);
}

}  // namespace

Task<File> OpenOptions::open(std::filesystem::path path) const {
  return open_copy(*this, std::move(path));
}

Task<File> OpenOptions::open_copy(OpenOptions o, std::filesystem::path path) {
  const char* call = "spool::fs::open";
  detail::check_kernel_path(path, call);
  const int flags = open_flags(o.read_, o.write_, o.append_, o.truncate_, o.create_, o.create_new_);
  auto f = co_await detail::fs_ops::open(path, flags, o.mode_, o.read_, o.write_ || o.append_);
  if (f.err != 0) detail::throw_fs_error(f.err, call, path);
  co_return File(std::move(f.value));
}

File::File() noexcept = default;
File::~File() = default;
File::File(File&&) noexcept = default;
File& File::operator=(File&&) noexcept = default;
File::File(std::shared_ptr<detail::FsFile> state) noexcept : state_(std::move(state)) {}

Task<File> File::open(std::filesystem::path path) {
  return OpenOptions().read(true).open(std::move(path));
}

Task<File> File::create(std::filesystem::path path) {
  return OpenOptions().write(true).create(true).truncate(true).open(std::move(path));
}

Task<File> File::create_new(std::filesystem::path path) {
  return OpenOptions().write(true).create_new(true).open(std::move(path));
}

int File::fd() const noexcept { return state_ ? state_->descriptor() : -1; }

const std::filesystem::path& File::path() const noexcept { return state_ ? state_->path : kNoPath; }

std::int64_t File::checked_offset(std::uint64_t offset) {
  if (offset > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw std::invalid_argument("spool::fs::File: offset " + std::to_string(offset) +
                                " is past the largest a file can have (2^63 - 1)");
  }
  return static_cast<std::int64_t>(offset);
}

Task<std::size_t> File::read_bytes(std::span<std::byte> buf, std::int64_t offset, bool exact) {
  return read_on(detail::FsFileUse(state_), buf, offset, exact);
}

Task<std::size_t> File::write_bytes(std::span<const std::byte> buf, std::int64_t offset, bool all) {
  return write_on(detail::FsFileUse(state_), buf, offset, all);
}

Task<std::uint64_t> File::seek(std::int64_t offset, SeekFrom from) {
  return seek_on(detail::FsFileUse(state_), offset, from);
}

Task<void> File::set_len(std::uint64_t len) { return set_len_on(detail::FsFileUse(state_), len); }
Task<void> File::allocate(std::uint64_t offset, std::uint64_t len) {
  if (len > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max() -
                                       checked_offset(offset))) {
    throw std::invalid_argument("spool::fs::File::allocate: offset " + std::to_string(offset) +
                                " plus length " + std::to_string(len) +
                                " is past the largest a file can have (2^63 - 1)");
  }
  return allocate_on(detail::FsFileUse(state_), offset, len);
}

Task<void> File::sync_all() { return sync_on(detail::FsFileUse(state_), false); }

Task<void> File::sync_data() { return sync_on(detail::FsFileUse(state_), true); }

Task<Metadata> File::metadata() { return metadata_on(detail::FsFileUse(state_)); }

Task<void> File::close() { return close_on(std::move(state_)); }

}  // namespace spool::fs
