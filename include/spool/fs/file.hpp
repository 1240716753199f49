// spool::fs::File and OpenOptions: an open file whose every call runs off the workers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <ranges>
#include <span>

#include "spool/core/task.hpp"
#include "spool/fs/metadata.hpp"
#include "spool/net/stream_ops.hpp"

namespace spool::detail {
struct FsFile;
}  // namespace spool::detail

namespace spool::fs {

class File;

/// How to open a file, as tokio's (and Rust's std) OpenOptions: set the flags, then
/// `co_await options.open(path)`. A combination that means nothing is refused by open with
/// std::invalid_argument: no access at all (neither read, write nor append), create /
/// create_new / truncate without write or append access, or truncate with append.
class SPOOL_API OpenOptions {
 public:
  /// Read access.
  OpenOptions& read(bool on) noexcept { return set(read_, on); }
  /// Write access (writes at the file position).
  OpenOptions& write(bool on) noexcept { return set(write_, on); }
  /// Write access where every write goes to the end (O_APPEND).
  OpenOptions& append(bool on) noexcept { return set(append_, on); }
  /// Cuts the file to length 0 when it is opened (O_TRUNC).
  OpenOptions& truncate(bool on) noexcept { return set(truncate_, on); }
  /// Creates the file if it does not exist (O_CREAT).
  OpenOptions& create(bool on) noexcept { return set(create_, on); }
  /// Creates the file, failing with EEXIST if it exists (O_CREAT | O_EXCL); create and
  /// truncate are then ignored.
  OpenOptions& create_new(bool on) noexcept { return set(create_new_, on); }
  /// The mode bits of a created file, before the umask (default 0666).
  OpenOptions& mode(std::uint32_t bits) noexcept {
    mode_ = bits;
    return *this;
  }
  /// Opens `path` so (O_CLOEXEC always). Throws std::system_error naming spool::fs::open
  /// and the path, std::invalid_argument for a combination that means nothing. The Task
  /// holds copies of the options and the path.
  Task<File> open(std::filesystem::path path) const;

 private:
  static Task<File> open_copy(OpenOptions options, std::filesystem::path path);
  OpenOptions& set(bool& flag, bool on) noexcept {
    flag = on;
    return *this;
  }
  bool read_ = false, write_ = false, append_ = false, truncate_ = false, create_ = false,
       create_new_ = false;
  std::uint32_t mode_ = 0666;
};

/// Where File::seek counts from.
enum class SeekFrom { kStart, kCurrent, kEnd };

/// An open file. Each call is a Task that answers from the kernel's caches where they hold the
/// answer, else runs its system calls on the worker's io_uring or the runtime's blocking pool
/// (outside every runtime, on a thread of its own: docs/fs.md), so no worker ever blocks on the
/// disk. Reads and writes go through a buffer of the call's own: a Task dropped before it ends
/// leaves its call running to the end, harmlessly (the bytes it read are lost; a write still
/// happens, and moves the position), and `buf` only has to outlive the Task while it is
/// awaited. Errors are std::system_error naming the call and the file's path
/// ("spool::fs::File::read \"/x\": ..."). Each Task shares the open file: it may outlive the
/// File that made it. Misuse is refused with a clear error: a read of a file opened without
/// read access, or a write without write access, throws std::system_error EBADF saying so; any
/// call on a closed, moved-from or default File throws std::logic_error. Move-only; the
/// descriptor closes when the last of the File and its running calls lets it go. Calls on one
/// File may run at once, but reads and writes at the file position then interleave as they
/// land, and two may use the same position: use read_at / write_at for concurrent access.
class SPOOL_API File {
 public:
  /// No file: every call throws std::logic_error.
  File() noexcept;
  ~File();
  /// Takes over the other's file; the other is left with no file.
  File(File&&) noexcept;
  /// Closes this file (as the destructor), then takes over the other's.
  File& operator=(File&&) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  /// Opens `path` read-only.
  static Task<File> open(std::filesystem::path path);
  /// Opens `path` write-only, creating it or cutting it to length 0.
  static Task<File> create(std::filesystem::path path);
  /// Creates `path` write-only; EEXIST if it exists.
  static Task<File> create_new(std::filesystem::path path);
  /// Options to open a file with (OpenOptions().read(true)...).
  static OpenOptions options() noexcept { return {}; }

  /// A read or write dropped while pending still runs (on the blocking pool or the ring):
  /// spool::codec's framed types refuse a File for that reason (spool::PendingIoOutlivesDrop).
  using pending_io_outlives_drop = void;

  /// Reads what one read(2) gives into `buf` at the file position: the count, 0 at the end.
  template <net::MutableByteBuffer B>
  Task<std::size_t> read(B&& buf) {
    return read_bytes(mutable_bytes(buf), -1, false);
  }
  /// Fills `buf` from the file position; throws net::UnexpectedEof if the file ends first.
  template <net::MutableByteBuffer B>
  Task<std::size_t> read_exact(B&& buf) {
    return read_bytes(mutable_bytes(buf), -1, true);
  }
  /// Reads what one pread(2) at `offset` gives (the file position does not move).
  template <net::MutableByteBuffer B>
  Task<std::size_t> read_at(B&& buf, std::uint64_t offset) {
    return read_bytes(mutable_bytes(buf), checked_offset(offset), false);
  }
  /// Writes what one write(2) takes of `buf` at the file position: the count.
  template <net::ByteBuffer B>
  Task<std::size_t> write(const B& buf) {
    return write_bytes(const_bytes(buf), -1, false);
  }
  /// Writes all of `buf` at the file position.
  template <net::ByteBuffer B>
  Task<std::size_t> write_all(const B& buf) {
    return write_bytes(const_bytes(buf), -1, true);
  }
  /// Writes what one pwrite(2) at `offset` takes of `buf` (the file position does not move;
  /// on a file opened with append, Linux writes at the end anyway).
  template <net::ByteBuffer B>
  Task<std::size_t> write_at(const B& buf, std::uint64_t offset) {
    return write_bytes(const_bytes(buf), checked_offset(offset), false);
  }
  /// Moves the file position to `offset` counted from `from`: the new position.
  Task<std::uint64_t> seek(std::int64_t offset, SeekFrom from = SeekFrom::kStart);
  /// Cuts or extends the file to `len` bytes (ftruncate).
  Task<void> set_len(std::uint64_t len);
  /// Reserves disk space for the bytes [offset, offset + len) (fallocate(2), mode 0): a later
  /// write there cannot fail for want of space. The file grows to offset + len if it is
  /// shorter; its bytes do not change. A length of 0 reserves nothing. A file system
  /// without fallocate answers EOPNOTSUPP.
  Task<void> allocate(std::uint64_t offset, std::uint64_t len);
  /// Flushes the data and the metadata to the device (fsync).
  Task<void> sync_all();
  /// Flushes the data, and the metadata only as far as reading the data needs (fdatasync).
  Task<void> sync_data();
  /// What fstat says of the file.
  Task<Metadata> metadata();
  /// Closes the file and reports close(2)'s error, which the destructor cannot. The File is
  /// closed from this call on (every later call throws std::logic_error), even if the Task
  /// is never awaited. Calls still running (dropped Tasks) keep the descriptor until they
  /// end; the last of them then closes it, silently.
  Task<void> close();

  /// True until the File is closed or moved from.
  bool is_open() const noexcept { return state_ != nullptr; }
  /// The descriptor (-1 when not open). The File still owns it.
  int fd() const noexcept;
  /// The path the file was opened with (empty when not open).
  const std::filesystem::path& path() const noexcept;

 private:
  friend class OpenOptions;
  explicit File(std::shared_ptr<detail::FsFile> state) noexcept;
  template <class B>
  static std::span<std::byte> mutable_bytes(B& buf) {
    return {reinterpret_cast<std::byte*>(std::ranges::data(buf)), std::ranges::size(buf)};
  }
  template <class B>
  static std::span<const std::byte> const_bytes(const B& buf) {
    return {reinterpret_cast<const std::byte*>(std::ranges::data(buf)), std::ranges::size(buf)};
  }
  // `offset` as the signed offset the calls take; throws std::invalid_argument past 2^63.
  static std::int64_t checked_offset(std::uint64_t offset);
  // offset -1: at the file position. exact / all: loop until the buffer is done.
  Task<std::size_t> read_bytes(std::span<std::byte> buf, std::int64_t offset, bool exact);
  Task<std::size_t> write_bytes(std::span<const std::byte> buf, std::int64_t offset, bool all);
  std::shared_ptr<detail::FsFile> state_;
};

}  // namespace spool::fs
