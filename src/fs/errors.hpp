// The errors of spool::fs: a call's name and its path(s) in every message.
#pragma once

#include <filesystem>
#include <string>

namespace spool::detail {

// `call` and the quoted path(s): "spool::fs::open \"/x\"", "spool::fs::rename \"/a\" -> \"/b\"".
std::string fs_what(const char* call, const std::filesystem::path& path);
std::string fs_what(const char* call, const std::filesystem::path& from,
                    const std::filesystem::path& to);
// Throws std::system_error(err) whose message is fs_what's, then strerror's.
[[noreturn]] void throw_fs_error(int err, const char* call, const std::filesystem::path& path);
[[noreturn]] void throw_fs_error(int err, const char* call, const std::filesystem::path& from,
                                 const std::filesystem::path& to);
// Throws std::invalid_argument naming `call` when `path` holds a NUL byte: the kernel would
// end the path there and act on another file.
void check_kernel_path(const std::filesystem::path& path, const char* call);
// `path` as the kernel takes it, checked.
inline std::string kernel_path(const std::filesystem::path& path, const char* call) {
  check_kernel_path(path, call);
  return path.string();
}
// `r` when it is no error (>= 0); else throws as throw_fs_error(-r, ...).
template <class... Paths>
long fs_check(long r, const char* call, const Paths&... paths) {
  if (r < 0) throw_fs_error(static_cast<int>(-r), call, paths...);
  return r;
}

}  // namespace spool::detail
