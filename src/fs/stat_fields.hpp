// Metadata::Fields from a struct stat or statx, and file types from st_mode (or, by DTTOIF,
// d_type).
#pragma once

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <filesystem>

#include "spool/fs/metadata.hpp"

namespace spool::detail {

// The file type that the S_IFMT bits of `mode` name.
inline std::filesystem::file_type file_type_of_mode(mode_t mode) noexcept {
  using T = std::filesystem::file_type;
  switch (mode & S_IFMT) {
    case S_IFREG:
      return T::regular;
    case S_IFDIR:
      return T::directory;
    case S_IFLNK:
      return T::symlink;
    case S_IFBLK:
      return T::block;
    case S_IFCHR:
      return T::character;
    case S_IFIFO:
      return T::fifo;
    case S_IFSOCK:
      return T::socket;
    default:
      return T::unknown;
  }
}

inline std::chrono::system_clock::time_point time_of(const timespec& ts) noexcept {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

inline fs::Metadata::Fields stat_fields(const struct stat& st) noexcept {
  return {.type = file_type_of_mode(st.st_mode),
          .mode = static_cast<std::uint32_t>(st.st_mode & 07777),
          .len = static_cast<std::uint64_t>(st.st_size),
          .ino = st.st_ino,
          .dev = st.st_dev,
          .nlink = st.st_nlink,
          .uid = st.st_uid,
          .gid = st.st_gid,
          .modified = time_of(st.st_mtim),
          .accessed = time_of(st.st_atim)};
}

// The same from a struct statx of STATX_BASIC_STATS (a ring statx, or the kernel's caches).
inline fs::Metadata::Fields statx_fields(const struct statx& st) noexcept {
  const auto time = [](const statx_timestamp& t) {
    return time_of(timespec{.tv_sec = t.tv_sec, .tv_nsec = t.tv_nsec});
  };
  return {.type = file_type_of_mode(st.stx_mode),
          .mode = static_cast<std::uint32_t>(st.stx_mode & 07777),
          .len = st.stx_size,
          .ino = st.stx_ino,
          .dev = makedev(st.stx_dev_major, st.stx_dev_minor),
          .nlink = st.stx_nlink,
          .uid = st.stx_uid,
          .gid = st.stx_gid,
          .modified = time(st.stx_mtime),
          .accessed = time(st.stx_atime)};
}

}  // namespace spool::detail
