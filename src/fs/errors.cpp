// The errors of spool::fs (errors.hpp).
#include "fs/errors.hpp"

#include <system_error>

namespace spool::detail {

std::string fs_what(const char* call, const std::filesystem::path& path) {
  return std::string(call) + " \"" + path.string() + "\"";
}

std::string fs_what(const char* call, const std::filesystem::path& from,
                    const std::filesystem::path& to) {
  return fs_what(call, from) + " -> \"" + to.string() + "\"";
}

void throw_fs_error(int err, const char* call, const std::filesystem::path& path) {
  throw std::system_error(err, std::generic_category(), fs_what(call, path));
}

void throw_fs_error(int err, const char* call, const std::filesystem::path& from,
                    const std::filesystem::path& to) {
  throw std::system_error(err, std::generic_category(), fs_what(call, from, to));
}

}  // namespace spool::detail
