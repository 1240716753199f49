// spool::fs::Metadata and Permissions: what stat says of a file, and its mode bits.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>

#include "spool/config.hpp"

namespace spool::fs {

/// A file's permission bits (the low 12 bits of its mode: rwx for owner, group and others,
/// and setuid / setgid / sticky). Given to set_permissions, read from Metadata.
class Permissions {
 public:
  /// The permissions `mode` (only its low 12 bits are kept).
  explicit Permissions(std::uint32_t mode) noexcept : mode_(mode & 07777) {}
  /// The mode bits, e.g. 0644.
  std::uint32_t mode() const noexcept { return mode_; }
  /// True when nobody may write (no w bit is set).
  bool readonly() const noexcept { return (mode_ & 0222) == 0; }
  /// Clears every w bit (`readonly`, as Rust's std does), or sets the owner's only (0200):
  /// Rust sets all three (0222), making the file writable by anyone; spool does not, on purpose.
  void set_readonly(bool readonly) noexcept { mode_ = readonly ? mode_ & ~0222u : mode_ | 0200u; }
  friend bool operator==(const Permissions&, const Permissions&) = default;

 private:
  std::uint32_t mode_;
};

/// What stat (or lstat, for symlink_metadata and DirEntry::metadata) reported of a file.
/// A plain value: reading it makes no system call.
class Metadata {
 public:
  /// The fields stat gave (spool fills them; a test may too).
  struct Fields {
    std::filesystem::file_type type = std::filesystem::file_type::unknown;  ///< st_mode's type
    std::uint32_t mode = 0;                            ///< st_mode's permission bits
    std::uint64_t len = 0;                             ///< st_size
    std::uint64_t ino = 0;                             ///< st_ino
    std::uint64_t dev = 0;                             ///< st_dev
    std::uint64_t nlink = 0;                           ///< st_nlink
    std::uint32_t uid = 0;                             ///< st_uid
    std::uint32_t gid = 0;                             ///< st_gid
    std::chrono::system_clock::time_point modified{};  ///< st_mtim
    std::chrono::system_clock::time_point accessed{};  ///< st_atim
  };
  /// Metadata made of `fields`.
  explicit Metadata(const Fields& fields) noexcept : f_(fields) {}
  /// The kind of file: regular, directory, symlink, block, character, fifo, socket.
  std::filesystem::file_type file_type() const noexcept { return f_.type; }
  /// True for a regular file.
  bool is_file() const noexcept { return f_.type == std::filesystem::file_type::regular; }
  /// True for a directory.
  bool is_dir() const noexcept { return f_.type == std::filesystem::file_type::directory; }
  /// True for a symbolic link (only metadata that did not follow links can say so).
  bool is_symlink() const noexcept { return f_.type == std::filesystem::file_type::symlink; }
  /// The size in bytes.
  std::uint64_t len() const noexcept { return f_.len; }
  /// The permission bits.
  Permissions permissions() const noexcept { return Permissions(f_.mode); }
  /// The inode number.
  std::uint64_t ino() const noexcept { return f_.ino; }
  /// The device that holds the file.
  std::uint64_t dev() const noexcept { return f_.dev; }
  /// The number of hard links.
  std::uint64_t nlink() const noexcept { return f_.nlink; }
  /// The owner's user id.
  std::uint32_t uid() const noexcept { return f_.uid; }
  /// The owner's group id.
  std::uint32_t gid() const noexcept { return f_.gid; }
  /// The last modification time.
  std::chrono::system_clock::time_point modified() const noexcept { return f_.modified; }
  /// The last access time (as the file system keeps it: often relatime).
  std::chrono::system_clock::time_point accessed() const noexcept { return f_.accessed; }

 private:
  Fields f_;
};

}  // namespace spool::fs
