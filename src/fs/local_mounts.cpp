// The mount table's local file systems (local_mounts.hpp).
#include "fs/local_mounts.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <mutex>
#include <string>

namespace spool::detail::fs_ops {

namespace {

bool local_type(std::string_view type) {
  return type == "ext4" || type == "ext3" || type == "ext2" || type == "xfs" || type == "btrfs" ||
         type == "tmpfs";
}

// The process's mount table, read again only after a mount or an unmount.
class MountTable {
 public:
  bool is_local(std::uint64_t mnt_id, dev_t dev) {
    const std::lock_guard lock(mu_);
    if (changed()) mounts_ = local_mounts_in(read_all());
    return std::any_of(mounts_.begin(), mounts_.end(),
                       [&](const LocalMount& m) { return m.id == mnt_id && m.dev == dev; });
  }

 private:
  // True at the first question and once after each change: mountinfo polls POLLPRI then. An
  // id and a device both reused by another mount in between would need an unmount and a
  // mount between this poll and the caller's statx.
  bool changed() {
    if (fd_ < 0) {
      fd_ = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);  // (no procfs: nothing local)
      return true;
    }
    pollfd p{fd_, POLLPRI, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  std::string read_all() const {
    std::string text;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::pread(fd_, buf, sizeof buf, static_cast<off_t>(text.size()));
      if (n <= 0) return text;
      text.append(buf, static_cast<std::size_t>(n));
    }
  }

  std::mutex mu_;
  int fd_ = -1;
  std::vector<LocalMount> mounts_;
};

}  // namespace

bool is_local_mount(std::uint64_t mnt_id, dev_t dev) noexcept {
  try {
    static MountTable* const table = new MountTable;  // never destroyed: workers may outlive exit
    return table->is_local(mnt_id, dev);
  } catch (...) {
    return false;  // (no memory for the table: the slow way)
  }
}

std::vector<LocalMount> local_mounts_in(std::string_view mountinfo) {
  // "36 35 98:0 /root /mnt rw,noatime master:1 - ext4 /dev/vda rw": the id, the parent's,
  // major:minor, root, mount point, options, optional fields up to "-", then the type.
  // Spaces inside fields are escaped (\040), so a space always separates.
  std::vector<LocalMount> out;
  while (!mountinfo.empty()) {
    const std::size_t eol = std::min(mountinfo.find('\n'), mountinfo.size());
    const std::string_view line = mountinfo.substr(0, eol);
    mountinfo.remove_prefix(std::min(eol + 1, mountinfo.size()));
    std::vector<std::string_view> f;
    for (std::size_t at = 0; at < line.size();) {
      const std::size_t end = std::min(line.find(' ', at), line.size());
      f.push_back(line.substr(at, end - at));
      at = end + 1;
    }
    const auto dash = std::find(f.begin() + std::min<std::size_t>(f.size(), 6), f.end(), "-");
    if (dash == f.end() || dash + 1 == f.end() || !local_type(dash[1])) continue;
    std::uint64_t id = 0;
    unsigned major = 0;
    unsigned minor = 0;
    const std::string_view dev = f[2];
    const std::size_t colon = dev.find(':');
    if (colon == std::string_view::npos ||
        std::from_chars(f[0].data(), f[0].data() + f[0].size(), id).ec != std::errc() ||
        std::from_chars(dev.data(), dev.data() + colon, major).ec != std::errc() ||
        std::from_chars(dev.data() + colon + 1, dev.data() + dev.size(), minor).ec != std::errc()) {
      continue;
    }
    out.push_back({id, makedev(major, minor)});
  }
  return out;
}

}  // namespace spool::detail::fs_ops
