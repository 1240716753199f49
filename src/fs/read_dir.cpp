// spool::fs::read_dir, ReadDir and DirEntry: batches of entries, one blocking call each.
#include "spool/fs/read_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "fs/errors.hpp"
#include "fs/fs_ops.hpp"
#include "fs/fs_state.hpp"
#include "fs/stat_fields.hpp"
#include "spool/fs/ops.hpp"

namespace spool::detail {

int FsDir::fetch_batch() {
  std::lock_guard lock(mutex);
  for (std::size_t n = 0; n < fs::ReadDir::kBatch && !at_end;) {
    errno = 0;  // readdir's end and its error differ only by errno
    const dirent* e = ::readdir(dir);
    if (e == nullptr) {
      if (errno != 0) return errno;
      at_end = true;
      break;
    }
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    // DTTOIF: d_type is the S_IFMT bits shifted (DT_UNKNOWN, where the file system gives
    // no type, is none of them).
    std::filesystem::file_type type = file_type_of_mode(DTTOIF(e->d_type));
    if (type == std::filesystem::file_type::unknown) {
      struct stat st {};
      if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        type = file_type_of_mode(st.st_mode);
      }
    }
    ready.push_back(fs::DirEntry(path / e->d_name, e->d_ino, type));
    ++n;
  }
  return 0;
}

}  // namespace spool::detail

namespace spool::fs {

namespace {

// next_entry's body: takes `dir`, not `this`, so that its Task may outlive the ReadDir.
Task<std::optional<DirEntry>> next_on(std::shared_ptr<detail::FsDir> dir) {
  if (!dir) {
    throw std::logic_error(
        "spool::fs::ReadDir::next_entry: the ReadDir was moved from; use the one it was moved "
        "into");
  }
  for (;;) {
    {
      std::lock_guard lock(dir->mutex);
      if (!dir->ready.empty()) {
        DirEntry e = std::move(dir->ready.front());
        dir->ready.pop_front();
        co_return e;
      }
      if (dir->at_end) co_return std::nullopt;
    }
    detail::fs_check(co_await detail::fs_ops::read_dir_batch(dir), "spool::fs::read_dir",
                     dir->path);
  }
}

}  // namespace

Task<Metadata> DirEntry::metadata() const { return symlink_metadata(path_); }

ReadDir::ReadDir(std::shared_ptr<detail::FsDir> dir) noexcept : dir_(std::move(dir)) {}
ReadDir::ReadDir(ReadDir&&) noexcept = default;
ReadDir& ReadDir::operator=(ReadDir&&) noexcept = default;
ReadDir::~ReadDir() = default;

Task<std::optional<DirEntry>> ReadDir::next_entry() { return next_on(dir_); }

Poll<std::optional<DirEntry>> ReadDir::poll_next(Context& cx) {
  if (!next_) next_.emplace(next_entry());
  try {
    Poll<std::optional<DirEntry>> entry = next_->poll(cx);
    if (entry.is_ready()) next_.reset();
    return entry;
  } catch (...) {
    next_.reset();  // a failed call is not polled again: the next poll asks afresh
    throw;
  }
}

Task<ReadDir> read_dir(std::filesystem::path path) {
  const char* call = "spool::fs::read_dir";
  auto d = co_await detail::fs_ops::open_dir(detail::kernel_path(path, call));
  if (d.err != 0) detail::throw_fs_error(d.err, call, path);
  co_return ReadDir(std::move(d.value));
}

}  // namespace spool::fs
