// The fs operations on a worker's own io_uring (ring_ops.hpp).
#include "fs/ring_ops.hpp"

#ifdef SPOOL_HAVE_LIBURING

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>
#include <vector>

#include "context/current.hpp"
#include "driver/io/thread_ring.hpp"
#include "fs/stat_fields.hpp"
#include "runtime/shared.hpp"

namespace spool::detail::fs_ops::ring {

namespace {

// A leaf future that hands its operation to this thread's ring at its first poll, and is
// ready with the operation's deliver(result), or kNotOnRing. The operation outlives the
// future while the kernel may still use it (RingOp).
template <class Op>
class OnRing {
 public:
  explicit OnRing(std::unique_ptr<Op> op) noexcept : op_(op.release()) {}
  OnRing(OnRing&& other) noexcept
      : op_(std::exchange(other.op_, nullptr)), submitted_(other.submitted_) {}
  OnRing& operator=(OnRing&&) = delete;
  ~OnRing() {
    if (op_ == nullptr) return;
    if (submitted_) {
      op_->abandon();
    } else {
      delete op_;
    }
  }

  Poll<long> poll(Context& cx) {
    if (!submitted_) {
      WorkerRing* r = this_thread_ring != nullptr ? this_thread_ring->ring() : nullptr;
      if (r == nullptr || !r->supports(Op::kOpcode) ||
          !r->push(op_, [this](io_uring_sqe* sqe) { op_->prep(sqe); })) {
        return Poll<long>::ready(kNotOnRing);
      }
      submitted_ = true;
      if (RuntimeShared* rt = current_runtime_ptr()) rt->count_fs_ring_op();
    }
    const std::optional<int> r = op_->poll_result(cx);
    if (!r) return pending;
    if (Op::did_not_run(*r)) return Poll<long>::ready(kNotOnRing);
    return Poll<long>::ready(op_->deliver(*r));
  }

 private:
  Op* op_;
  bool submitted_ = false;
};

// The arguments by value: the Task starts after its caller's full expression has ended.
template <class Op, class... Args>
Task<long> on_ring(Args... args) {
  OnRing<Op> call(std::make_unique<Op>(std::move(args)...));
  co_return co_await call;
}

// The base of the fs operations. A ring cancels an fs operation only as its thread ends or
// blocks, and such an answer says that the operation did not run, and the pool must: a
// cancelled open or path call in the kernel's worker answers EINTR, or the kernel's internal
// ERESTARTSYS. (CloseOp hides did_not_run: a close that answers EINTR did close.)
struct FsOp : RingOp {
  static bool did_not_run(int result) noexcept {
    constexpr int kRestartSys = 512;
    return result == -ECANCELED || result == -EINTR || result == -kRestartSys;
  }
};

// What most operations answer: the kernel's result as it is.
struct PlainAnswer : FsOp {
  long deliver(int result) noexcept { return result; }
};

// pread into a buffer of its own (the caller's may be gone when the kernel writes), copied
// into the caller's when the answer is delivered (the caller is then awaiting it).
struct ReadOp final : FsOp {
  static constexpr unsigned kOpcode = IORING_OP_READ;
  ReadOp(FsFileUse f, std::span<std::byte> dest, std::int64_t offset)
      : f(std::move(f)), data(new std::byte[dest.size()]), dest(dest), offset(offset) {}
  void prep(io_uring_sqe* sqe) noexcept {
    // An offset of -1: the file position, which the read moves (IORING_FEAT_RW_CUR_POS).
    io_uring_prep_read(sqe, f->descriptor(), data.get(), static_cast<unsigned>(dest.size()),
                       static_cast<std::uint64_t>(offset));
  }
  long deliver(int result) noexcept {
    if (result > 0) std::copy_n(data.get(), result, dest.begin());
    return result;
  }
  FsFileUse f;
  std::unique_ptr<std::byte[]> data;
  std::span<std::byte> dest;
  std::int64_t offset;
};

// Linux (seen on 6.18) answers a ring write at the file position whose short first try
// io_uring retries, and whose retry fails (RLIMIT_FSIZE, ENOSPC, EDQUOT, EIO), with the bytes
// written but leaves the position, and the next write at the position went over them. So a
// write at the position (offset -1) to a seekable file not in append mode notes the position
// as it is submitted, and an answer of n > 0 bytes that finds it still there moves it n bytes
// on: when delivered, before the waiter goes on, or at the reap of an answer nobody collects.
struct WriteOp final : FsOp {
  static constexpr unsigned kOpcode = IORING_OP_WRITE;
  WriteOp(FsFileUse f, std::span<const std::byte> src, std::int64_t offset)
      : f(std::move(f)), data(src.begin(), src.end()), offset(offset) {}
  ~WriteOp() override {
    if (completed()) mend_position(result());
  }
  void prep(io_uring_sqe* sqe) noexcept {
    const int fd = f->descriptor();
    if (offset < 0 && (::fcntl(fd, F_GETFL) & O_APPEND) == 0) {
      position_before = ::lseek(fd, 0, SEEK_CUR);  // (-1 for a pipe: nothing to mend)
    }
    io_uring_prep_write(sqe, fd, data.data(), static_cast<unsigned>(data.size()),
                        static_cast<std::uint64_t>(offset));
  }
  long deliver(int result) noexcept {
    mend_position(result);
    return result;
  }
  void mend_position(int result) noexcept {
    const int fd = f->descriptor();
    if (position_before >= 0 && result > 0 && ::lseek(fd, 0, SEEK_CUR) == position_before) {
      ::lseek(fd, position_before + result, SEEK_SET);
    }
    position_before = -1;  // once
  }
  FsFileUse f;
  std::vector<std::byte> data;
  std::int64_t offset;
  off_t position_before = -1;
};

struct SyncOp final : PlainAnswer {
  static constexpr unsigned kOpcode = IORING_OP_FSYNC;
  SyncOp(FsFileUse f, bool data_only) : f(std::move(f)), data_only(data_only) {}
  void prep(io_uring_sqe* sqe) noexcept {
    io_uring_prep_fsync(sqe, f->descriptor(), data_only ? IORING_FSYNC_DATASYNC : 0);
  }
  FsFileUse f;
  bool data_only;
};

struct AllocateOp final : PlainAnswer {
  static constexpr unsigned kOpcode = IORING_OP_FALLOCATE;
  AllocateOp(FsFileUse f, std::uint64_t offset, std::uint64_t len)
      : f(std::move(f)), offset(offset), len(len) {}
  void prep(io_uring_sqe* sqe) noexcept {
    io_uring_prep_fallocate(sqe, f->descriptor(), 0, offset, len);
  }
  FsFileUse f;
  std::uint64_t offset, len;
};

// statx into a struct of its own (the caller's frame may be gone when the kernel writes),
// turned into the caller's Fields when the answer is delivered (the caller awaits it then).
// `f` set: its descriptor (AT_EMPTY_PATH); else `path`.
struct StatOp final : FsOp {
  static constexpr unsigned kOpcode = IORING_OP_STATX;
  StatOp(FsFileUse f, std::string path, bool follow, fs::Metadata::Fields* fields)
      : f(std::move(f)), path(std::move(path)), follow(follow), fields(fields) {}
  void prep(io_uring_sqe* sqe) noexcept {
    const int dir = f ? f->descriptor() : AT_FDCWD;
    const int flags = (f ? AT_EMPTY_PATH : 0) | (follow ? 0 : AT_SYMLINK_NOFOLLOW);
    io_uring_prep_statx(sqe, dir, path.c_str(), flags, STATX_BASIC_STATS, &st);
  }
  long deliver(int result) noexcept {
    if (result == 0) *fields = statx_fields(st);
    return result;
  }
  FsFileUse f;
  std::string path;  // "" with f
  bool follow;
  fs::Metadata::Fields* fields;
  struct statx st {};
};

// openat; the descriptor goes to whoever delivers it, else the destructor closes it.
struct OpenOp final : FsOp {
  static constexpr unsigned kOpcode = IORING_OP_OPENAT;
  OpenOp(std::string path, int flags, mode_t mode)
      : path(std::move(path)), flags(flags), mode(mode) {}
  ~OpenOp() override {
    if (completed() && result() >= 0 && !taken) ::close(result());
  }
  void prep(io_uring_sqe* sqe) noexcept {
    io_uring_prep_openat(sqe, AT_FDCWD, path.c_str(), flags | O_CLOEXEC, mode);
    // Straight to the kernel's workers: its first, non-blocking try adds O_NONBLOCK, with
    // which a FIFO opens at once (reading) or fails ENXIO (writing) where open(2) waits.
    // (A cached local file opened to read does not come here: open_cached opens it.)
    io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
  }
  long deliver(int result) noexcept {
    taken = true;
    return result;
  }
  std::string path;
  int flags;
  mode_t mode;
  bool taken = false;
};

// close of f's descriptor, which stays f's until the kernel has closed it: a close the ring
// cancelled leaves it to the pool's; any other answer (an error too: Linux frees the
// descriptor whatever close says) takes it from f, delivered or not (a dropped Task).
struct CloseOp final : PlainAnswer {
  static constexpr unsigned kOpcode = IORING_OP_CLOSE;
  static bool did_not_run(int result) noexcept { return result == -ECANCELED; }
  explicit CloseOp(std::shared_ptr<FsFile> f) : f(std::move(f)) {}
  ~CloseOp() override {
    if (completed() && !did_not_run(result())) f->fd.store(-1, std::memory_order_relaxed);
  }
  void prep(io_uring_sqe* sqe) noexcept { io_uring_prep_close(sqe, f->descriptor()); }
  std::shared_ptr<FsFile> f;
};

// The operations on paths: each keeps its strings until the kernel has read them.
struct RenameOp final : PlainAnswer {
  static constexpr unsigned kOpcode = IORING_OP_RENAMEAT;
  RenameOp(std::string from, std::string to) : from(std::move(from)), to(std::move(to)) {}
  void prep(io_uring_sqe* sqe) noexcept {
    io_uring_prep_renameat(sqe, AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), 0);
  }
  std::string from, to;
};

struct UnlinkOp final : PlainAnswer {
  static constexpr unsigned kOpcode = IORING_OP_UNLINKAT;
  UnlinkOp(std::string path, bool dir) : path(std::move(path)), dir(dir) {}
  void prep(io_uring_sqe* sqe) noexcept {
    io_uring_prep_unlinkat(sqe, AT_FDCWD, path.c_str(), dir ? AT_REMOVEDIR : 0);
  }
  std::string path;
  bool dir;
};

struct MkdirOp final : PlainAnswer {
  static constexpr unsigned kOpcode = IORING_OP_MKDIRAT;
  MkdirOp(std::string path, mode_t mode) : path(std::move(path)), mode(mode) {}
  void prep(io_uring_sqe* sqe) noexcept {
    io_uring_prep_mkdirat(sqe, AT_FDCWD, path.c_str(), mode);
  }
  std::string path;
  mode_t mode;
};

struct LinkOp final : PlainAnswer {
  static constexpr unsigned kOpcode = IORING_OP_LINKAT;
  LinkOp(std::string original, std::string link)
      : original(std::move(original)), link(std::move(link)) {}
  void prep(io_uring_sqe* sqe) noexcept {
    io_uring_prep_linkat(sqe, AT_FDCWD, original.c_str(), AT_FDCWD, link.c_str(), 0);
  }
  std::string original, link;
};

struct SymlinkOp final : PlainAnswer {
  static constexpr unsigned kOpcode = IORING_OP_SYMLINKAT;
  SymlinkOp(std::string original, std::string link)
      : original(std::move(original)), link(std::move(link)) {}
  void prep(io_uring_sqe* sqe) noexcept {
    io_uring_prep_symlinkat(sqe, original.c_str(), AT_FDCWD, link.c_str());
  }
  std::string original, link;
};

}  // namespace

Task<long> read(FsFileUse f, std::span<std::byte> buf, std::int64_t offset) {
  return on_ring<ReadOp>(std::move(f), buf.first(std::min(buf.size(), kMaxTransfer)), offset);
}
Task<long> write(FsFileUse f, std::span<const std::byte> buf, std::int64_t offset) {
  return on_ring<WriteOp>(std::move(f), buf.first(std::min(buf.size(), kMaxTransfer)), offset);
}
Task<long> sync(FsFileUse f, bool data_only) { return on_ring<SyncOp>(std::move(f), data_only); }
Task<long> allocate(FsFileUse f, std::uint64_t offset, std::uint64_t len) {
  return on_ring<AllocateOp>(std::move(f), offset, len);
}
Task<long> stat_fd(FsFileUse f, fs::Metadata::Fields* fields) {
  return on_ring<StatOp>(std::move(f), std::string(), true, fields);
}
Task<long> stat_path(std::string path, bool follow, fs::Metadata::Fields* fields) {
  return on_ring<StatOp>(FsFileUse(nullptr), std::move(path), follow, fields);
}
Task<long> open(std::string path, int flags, mode_t mode) {
  return on_ring<OpenOp>(std::move(path), flags, mode);
}
Task<long> close(std::shared_ptr<FsFile> f) { return on_ring<CloseOp>(std::move(f)); }
Task<long> rename(std::string from, std::string to) {
  return on_ring<RenameOp>(std::move(from), std::move(to));
}
Task<long> unlink(std::string path, bool dir) { return on_ring<UnlinkOp>(std::move(path), dir); }
Task<long> mkdir(std::string path, mode_t mode) { return on_ring<MkdirOp>(std::move(path), mode); }
Task<long> link(std::string original, std::string link) {
  return on_ring<LinkOp>(std::move(original), std::move(link));
}
Task<long> symlink(std::string original, std::string link) {
  return on_ring<SymlinkOp>(std::move(original), std::move(link));
}

}  // namespace spool::detail::fs_ops::ring

#else  // !SPOOL_HAVE_LIBURING: no ring, every operation takes the pool

namespace spool::detail::fs_ops::ring {

namespace {
Task<long> not_on_ring() { co_return kNotOnRing; }
}  // namespace

Task<long> read(FsFileUse, std::span<std::byte>, std::int64_t) { return not_on_ring(); }
Task<long> write(FsFileUse, std::span<const std::byte>, std::int64_t) { return not_on_ring(); }
Task<long> sync(FsFileUse, bool) { return not_on_ring(); }
Task<long> allocate(FsFileUse, std::uint64_t, std::uint64_t) { return not_on_ring(); }
Task<long> stat_fd(FsFileUse, fs::Metadata::Fields*) { return not_on_ring(); }
Task<long> stat_path(std::string, bool, fs::Metadata::Fields*) { return not_on_ring(); }
Task<long> open(std::string, int, mode_t) { return not_on_ring(); }
Task<long> close(std::shared_ptr<FsFile>) { return not_on_ring(); }
Task<long> rename(std::string, std::string) { return not_on_ring(); }
Task<long> unlink(std::string, bool) { return not_on_ring(); }
Task<long> mkdir(std::string, mode_t) { return not_on_ring(); }
Task<long> link(std::string, std::string) { return not_on_ring(); }
Task<long> symlink(std::string, std::string) { return not_on_ring(); }

}  // namespace spool::detail::fs_ops::ring

#endif
