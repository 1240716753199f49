// The errors of spool::fs (errors.hpp).
#include "fs/errors.hpp"

#include <stdexcept>
#include <system_error>

namespace spool::detail {

std::string fs_what(const char* call, const std::filesystem::path& path) {
  return std::string(call) + " \"" + path.string() + "\"";
}

std::string fs_what(const char* call, const std::filesystem::path& from,
                    const std::filesystem::path& to) {
  return fs_what(call, from) + " -> \"" + to.string() + "\"";
}

void check_kernel_path(const std::filesystem::path& path, const char* call) {
  const std::string& s = path.native();
  if (s.find('\0') == std::string::npos) return;
  std::string shown;  // the NUL made visible: what() is a C string
  for (const char c : s) shown += c == '\0' ? std::string("\\0") : std::string(1, c);
  throw std::invalid_argument(std::string(call) + " \"" + shown +
                              "\": the path contains a NUL byte, where the kernel would end it "
                              "and act on a shorter path, another file; remove the NUL");
}

void throw_fs_error(int err, const char* call, const std::filesystem::path& path) {
  throw std::system_error(err, std::generic_category(), fs_what(call, path));
}

void throw_fs_error(int err, const char* call, const std::filesystem::path& from,
                    const std::filesystem::path& to) {
  throw std::system_error(err, std::generic_category(), fs_what(call, from, to));
}

}  // namespace spool::detail
