// spool::fs::ReadDir and DirEntry: a directory's entries as an async stream.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "spool/core/task.hpp"
#include "spool/fs/metadata.hpp"

namespace spool::detail {
struct FsDir;
}  // namespace spool::detail

namespace spool::fs {

/// One entry of a directory, as ReadDir::next_entry gives it ("." and ".." never are).
class SPOOL_API DirEntry {
 public:
  /// The directory's path joined with the entry's name.
  std::filesystem::path path() const noexcept { return path_; }
  /// The entry's name (the last component of path()).
  std::filesystem::path file_name() const { return path_.filename(); }
  /// The entry's inode number.
  std::uint64_t ino() const noexcept { return ino_; }
  /// The kind of file, as the directory listing said (where the file system does not say,
  /// the batch that fetched the entry asked lstat); a symlink is a symlink, not followed.
  std::filesystem::file_type file_type() const noexcept { return type_; }
  /// What lstat says of the entry now (symlinks not followed, as tokio's DirEntry).
  Task<Metadata> metadata() const;

 private:
  friend struct detail::FsDir;
  DirEntry(std::filesystem::path path, std::uint64_t ino, std::filesystem::file_type type)
      : path_(std::move(path)), ino_(ino), type_(type) {}
  std::filesystem::path path_;
  std::uint64_t ino_;
  std::filesystem::file_type type_;
};

/// An open directory's entries (spool::fs::read_dir makes it), in the order the file system
/// lists them. Entries are fetched in batches, one blocking call per batch (kBatch entries),
/// so walking a large directory costs one hop per batch, not one per entry. Move-only; the
/// directory closes when the ReadDir and the batch it is fetching are gone. next_entry calls
/// may overlap (each entry is given once), and one dropped while its batch is fetched loses
/// nothing: the batch lands in the ReadDir for the next call.
class SPOOL_API ReadDir {
 public:
  /// Entries fetched per blocking call.
  static constexpr std::size_t kBatch = 256;
  /// Takes over the other's listing; the other is left with none.
  ReadDir(ReadDir&&) noexcept;
  /// Closes this listing, then takes over the other's.
  ReadDir& operator=(ReadDir&&) noexcept;
  ReadDir(const ReadDir&) = delete;
  ReadDir& operator=(const ReadDir&) = delete;
  ~ReadDir();
  /// The next entry, or nullopt after the last. Throws std::system_error naming
  /// spool::fs::read_dir and the path if the listing fails, std::logic_error on a
  /// moved-from ReadDir.
  Task<std::optional<DirEntry>> next_entry();
  /// The next entry, nullopt after the last: a ReadDir is a spool::Stream (`collect`,
  /// `filter`, a select branch through spool::next). The next_entry it waits for is kept
  /// across polls; errors as next_entry's.
  Poll<std::optional<DirEntry>> poll_next(Context& cx);

 private:
  friend Task<ReadDir> read_dir(std::filesystem::path path);
  explicit ReadDir(std::shared_ptr<detail::FsDir> dir) noexcept;
  std::shared_ptr<detail::FsDir> dir_;
  std::optional<Task<std::optional<DirEntry>>> next_;  // poll_next's entry under way
};

/// Opens the directory `path` for reading its entries.
SPOOL_API Task<ReadDir> read_dir(std::filesystem::path path);

}  // namespace spool::fs
