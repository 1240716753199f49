// spool::fs's free functions: whole-file reads and writes, copies, links, directories,
// metadata. Each is a Task whose system calls run on the polling worker's io_uring ring where
// it has one and the kernel offers them, else on the blocking pool (docs/fs.md, "Paths").
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spool/core/task.hpp"
#include "spool/fs/metadata.hpp"

namespace spool::fs {

// Every function throws std::system_error naming itself and its path(s), e.g.
// "spool::fs::remove_file \"/x\": No such file or directory"; a Task dropped before it ends
// leaves its call running to its end, but for the chains of ring operations (a whole read,
// create_dir_all on a ring), which stop where they are. Each Task holds copies of its
// arguments.

/// The whole content of the file `path`: open, read to the end, close (a chain of ring
/// operations, or one blocking call).
SPOOL_API Task<std::vector<std::byte>> read(std::filesystem::path path);
/// The whole content of the file `path` as a string of its bytes (no encoding is checked).
SPOOL_API Task<std::string> read_to_string(std::filesystem::path path);
/// Makes `path` hold exactly `contents` (created 0666 before the umask, or truncated).
/// The bytes are copied when write is called: `contents` need not outlive the call.
SPOOL_API Task<void> write(std::filesystem::path path, std::span<const std::byte> contents);
/// write() of a string's bytes.
SPOOL_API Task<void> write(std::filesystem::path path, std::string_view contents);
/// Copies the file `from` to `to` (created or truncated, with from's permission bits),
/// with copy_file_range where the kernel can: the number of bytes copied.
SPOOL_API Task<std::uint64_t> copy(std::filesystem::path from, std::filesystem::path to);
/// Renames `from` to `to`, replacing `to` if it exists (rename(2)).
SPOOL_API Task<void> rename(std::filesystem::path from, std::filesystem::path to);
/// Removes the file (or symlink) `path`.
SPOOL_API Task<void> remove_file(std::filesystem::path path);
/// Creates the directory `path` (0777 before the umask); EEXIST if it exists.
SPOOL_API Task<void> create_dir(std::filesystem::path path);
/// Creates `path` and every missing parent; an existing directory is no error.
SPOOL_API Task<void> create_dir_all(std::filesystem::path path);
/// Removes the empty directory `path`.
SPOOL_API Task<void> remove_dir(std::filesystem::path path);
/// Removes the directory `path` and all under it, never following a symlink (nor "link/");
/// ENOENT if it is missing, ENOTDIR if no directory, EINVAL if it ends in "." or "..".
SPOOL_API Task<void> remove_dir_all(std::filesystem::path path);
/// What stat says of `path` (symlinks followed).
SPOOL_API Task<Metadata> metadata(std::filesystem::path path);
/// What lstat says of `path` (a symlink itself).
SPOOL_API Task<Metadata> symlink_metadata(std::filesystem::path path);
/// The absolute path of `path` with every symlink, "." and ".." resolved (realpath(3)).
SPOOL_API Task<std::filesystem::path> canonicalize(std::filesystem::path path);
/// Makes `link` a new name of the file `original` (link(2)).
SPOOL_API Task<void> hard_link(std::filesystem::path original, std::filesystem::path link);
/// Makes `link` a symbolic link whose target is `original` (symlink(2)).
SPOOL_API Task<void> symlink(std::filesystem::path original, std::filesystem::path link);
/// Sets the permission bits of `path` (chmod(2)).
SPOOL_API Task<void> set_permissions(std::filesystem::path path, Permissions perms);

}  // namespace spool::fs
