// spool::fs's free functions (spool/fs/ops.hpp): each one operation of fs_ops.hpp, checked.
#include "spool/fs/ops.hpp"

#include <sys/stat.h>

#include <system_error>

#include "fs/errors.hpp"
#include "fs/fs_ops.hpp"

namespace spool::fs {

namespace {

Task<void> write_owned(std::filesystem::path path, std::vector<std::byte> contents) {
  const char* call = "spool::fs::write";
  detail::fs_check(
      co_await detail::fs_ops::write_file(detail::kernel_path(path, call), std::move(contents)),
      call, path);
}

// stat or lstat of `path`, as Metadata; errors name `call`.
Task<Metadata> stat_as(std::filesystem::path path, bool follow, const char* call) {
  const auto st = co_await detail::fs_ops::stat_path(detail::kernel_path(path, call), follow);
  if (st.err != 0) detail::throw_fs_error(st.err, call, path);
  co_return Metadata(st.value);
}

}  // namespace

Task<std::vector<std::byte>> read(std::filesystem::path path) {
  const char* call = "spool::fs::read";
  auto r = co_await detail::fs_ops::read_file(detail::kernel_path(path, call));
  if (r.err != 0) detail::throw_fs_error(r.err, call, path);
  co_return std::move(r.value);
}

Task<std::string> read_to_string(std::filesystem::path path) {
  const char* call = "spool::fs::read_to_string";
  auto r = co_await detail::fs_ops::read_file(detail::kernel_path(path, call));
  if (r.err != 0) detail::throw_fs_error(r.err, call, path);
  co_return std::string(reinterpret_cast<const char*>(r.value.data()), r.value.size());
}

Task<void> write(std::filesystem::path path, std::span<const std::byte> contents) {
  return write_owned(std::move(path), std::vector<std::byte>(contents.begin(), contents.end()));
}

Task<void> write(std::filesystem::path path, std::string_view contents) {
  return write(std::move(path), std::as_bytes(std::span(contents.data(), contents.size())));
}

Task<std::uint64_t> copy(std::filesystem::path from, std::filesystem::path to) {
  const char* call = "spool::fs::copy";
  const auto r = co_await detail::fs_ops::copy_file(detail::kernel_path(from, call),
                                                    detail::kernel_path(to, call));
  using Refusal = detail::fs_ops::Copied::Refusal;
  if (r.value.refusal != Refusal::kNone) {
    throw std::system_error(
        r.err, std::generic_category(),
        detail::fs_what(call, from, to) +
            (r.value.refusal == Refusal::kSameFile
                 ? ": the source and the destination are the same file (copying would empty it)"
                 : ": the source is not a regular file (nor a symlink to one); only files copy"));
  }
  if (r.err != 0 && r.value.destination_failed) {
    throw std::system_error(r.err, std::generic_category(),
                            detail::fs_what(call, from, to) + ": opening the destination");
  }
  if (r.err != 0) detail::throw_fs_error(r.err, call, from, to);
  co_return r.value.bytes;
}

Task<void> rename(std::filesystem::path from, std::filesystem::path to) {
  const char* call = "spool::fs::rename";
  detail::fs_check(co_await detail::fs_ops::rename(detail::kernel_path(from, call),
                                                   detail::kernel_path(to, call)),
                   call, from, to);
}

Task<void> remove_file(std::filesystem::path path) {
  const char* call = "spool::fs::remove_file";
  detail::fs_check(co_await detail::fs_ops::unlink(detail::kernel_path(path, call)), call, path);
}

Task<void> create_dir(std::filesystem::path path) {
  const char* call = "spool::fs::create_dir";
  detail::fs_check(co_await detail::fs_ops::mkdir(detail::kernel_path(path, call), 0777), call,
                   path);
}

Task<void> create_dir_all(std::filesystem::path path) {
  const char* call = "spool::fs::create_dir_all";
  detail::fs_check(co_await detail::fs_ops::mkdir_all(detail::kernel_path(path, call)), call, path);
}

Task<void> remove_dir(std::filesystem::path path) {
  const char* call = "spool::fs::remove_dir";
  detail::fs_check(co_await detail::fs_ops::rmdir(detail::kernel_path(path, call)), call, path);
}

Task<void> remove_dir_all(std::filesystem::path path) {
  const char* call = "spool::fs::remove_dir_all";
  detail::fs_check(co_await detail::fs_ops::remove_all(detail::kernel_path(path, call)), call,
                   path);
}

Task<Metadata> metadata(std::filesystem::path path) {
  return stat_as(std::move(path), true, "spool::fs::metadata");
}

Task<Metadata> symlink_metadata(std::filesystem::path path) {
  return stat_as(std::move(path), false, "spool::fs::symlink_metadata");
}

Task<std::filesystem::path> canonicalize(std::filesystem::path path) {
  const char* call = "spool::fs::canonicalize";
  auto r = co_await detail::fs_ops::realpath(detail::kernel_path(path, call));
  if (r.err != 0) detail::throw_fs_error(r.err, call, path);
  co_return std::filesystem::path(std::move(r.value));
}

Task<void> hard_link(std::filesystem::path original, std::filesystem::path link) {
  const char* call = "spool::fs::hard_link";
  detail::fs_check(co_await detail::fs_ops::link(detail::kernel_path(original, call),
                                                 detail::kernel_path(link, call)),
                   call, original, link);
}

Task<void> symlink(std::filesystem::path original, std::filesystem::path link) {
  const char* call = "spool::fs::symlink";
  detail::fs_check(co_await detail::fs_ops::symlink(detail::kernel_path(original, call),
                                                    detail::kernel_path(link, call)),
                   call, original, link);
}

Task<void> set_permissions(std::filesystem::path path, Permissions perms) {
  const char* call = "spool::fs::set_permissions";
  detail::fs_check(co_await detail::fs_ops::chmod(detail::kernel_path(path, call), perms.mode()),
                   call, path);
}

}  // namespace spool::fs
