// spool::fs's free functions on a multi-thread runtime, a current-thread one and a foreign
// executor: each call's effect, and its errors (missing path, permission, EISDIR, ENOSPC,
// EFBIG under RLIMIT_FSIZE), each naming the call and the path.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/fs.hpp"

namespace {

namespace fs = spool::fs;
using spool::Task;
using spool_fs_test::FsTest;
using spool_fs_test::pattern;

constexpr std::size_t kMiB = 1024 * 1024;

class FsOps : public FsTest {};
SPOOL_FS_INSTANTIATE(FsOps);

using spool_fs_test::q;

TEST_P(FsOps, WriteReadAndReadToString) {
  const auto p = dir() / "w";
  const auto data = pattern(100'000);
  run(fs::write(p, data));
  EXPECT_EQ(run(fs::read(p)), data);
  run(fs::write(p, std::string_view("shorter")));  // truncates
  EXPECT_EQ(run(fs::read_to_string(p)), "shorter");
  EXPECT_EQ(run(fs::read_to_string("/proc/self/stat")).empty(), false);  // stat says size 0
}

TEST_P(FsOps, CopyChecksEveryByteAndKeepsTheMode) {
  const auto from = dir() / "from";
  const auto to = dir() / "to";
  const auto data = pattern(8 * kMiB + 3);
  run(fs::write(from, data));
  run(fs::set_permissions(from, fs::Permissions(0640)));
  run(fs::write(to, std::string_view("old content, longer than nothing")));
  EXPECT_EQ(run(fs::copy(from, to)), data.size());
  EXPECT_EQ(run(fs::read(to)), data);
  EXPECT_EQ(run(fs::metadata(to)).permissions().mode(), 0640u);
  SPOOL_EXPECT_FS_ERROR(run(fs::copy(dir() / "none", to)), ENOENT,
                        "spool::fs::copy " + q(dir() / "none") + " -> " + q(to));
  SPOOL_EXPECT_FS_ERROR(run(fs::copy(dir(), to)), EISDIR,
                        "spool::fs::copy " + q(dir()) + " -> " + q(to));
}

// The 1 GiB copy of issue 30, content checked in 1 MiB blocks: opt-in (SPOOL_FS_BIG_TESTS=1),
// since it writes 2 GiB to the temporary directory; CI runs the 8 MiB copy above.
TEST_P(FsOps, CopyOneGiB) {
  if (std::getenv("SPOOL_FS_BIG_TESTS") == nullptr) GTEST_SKIP() << "set SPOOL_FS_BIG_TESTS=1";
  const auto from = dir() / "big";
  const auto to = dir() / "big-copy";
  constexpr std::size_t kBlocks = 1024;
  run([](std::filesystem::path from, std::filesystem::path to) -> Task<void> {
    {
      fs::File f = co_await fs::File::create(from);
      for (std::size_t b = 0; b < kBlocks; ++b) co_await f.write_all(pattern(kMiB, b * 7));
    }
    EXPECT_EQ(co_await fs::copy(from, to), kBlocks * kMiB);
    fs::File c = co_await fs::File::open(to);
    std::vector<std::byte> block(kMiB);
    for (std::size_t b = 0; b < kBlocks; ++b) {
      co_await c.read_exact(block);
      if (block != pattern(kMiB, b * 7)) {
        ADD_FAILURE() << "block " << b << " differs";
        break;
      }
    }
  }(from, to));
}

TEST_P(FsOps, RenameRemoveAndLinks) {
  const auto a = dir() / "a";
  const auto b = dir() / "b";
  run(fs::write(a, std::string_view("A")));
  run(fs::rename(a, b));
  EXPECT_EQ(run(fs::read_to_string(b)), "A");
  SPOOL_EXPECT_FS_ERROR(run(fs::rename(a, b)), ENOENT, "spool::fs::rename " + q(a) + " -> " + q(b));
  const auto h = dir() / "h";
  run(fs::hard_link(b, h));
  EXPECT_EQ(run(fs::metadata(b)).nlink(), 2u);
  EXPECT_EQ(run(fs::metadata(h)).ino(), run(fs::metadata(b)).ino());
  SPOOL_EXPECT_FS_ERROR(run(fs::hard_link(b, h)), EEXIST,
                        "spool::fs::hard_link " + q(b) + " -> " + q(h));
  const auto s = dir() / "s";
  run(fs::symlink("b", s));
  EXPECT_TRUE(run(fs::symlink_metadata(s)).is_symlink());
  EXPECT_TRUE(run(fs::metadata(s)).is_file());
  EXPECT_EQ(run(fs::read_to_string(s)), "A");
  SPOOL_EXPECT_FS_ERROR(run(fs::symlink("b", s)), EEXIST,
                        "spool::fs::symlink " + q("b") + " -> " + q(s));
  EXPECT_EQ(run(fs::canonicalize(dir() / "." / "s")), std::filesystem::canonical(b));
  SPOOL_EXPECT_FS_ERROR(run(fs::canonicalize(a)), ENOENT, "spool::fs::canonicalize " + q(a));
  run(fs::remove_file(s));
  run(fs::remove_file(b));
  EXPECT_EQ(run(fs::read_to_string(h)), "A");
  SPOOL_EXPECT_FS_ERROR(run(fs::remove_file(b)), ENOENT, "spool::fs::remove_file " + q(b));
  SPOOL_EXPECT_FS_ERROR(run(fs::metadata(b)), ENOENT, "spool::fs::metadata " + q(b));
  SPOOL_EXPECT_FS_ERROR(run(fs::symlink_metadata(b)), ENOENT,
                        "spool::fs::symlink_metadata " + q(b));
  SPOOL_EXPECT_FS_ERROR(run(fs::set_permissions(b, fs::Permissions(0600))), ENOENT,
                        "spool::fs::set_permissions " + q(b));
}

TEST_P(FsOps, Directories) {
  const auto d = dir() / "d";
  run(fs::create_dir(d));
  EXPECT_TRUE(run(fs::metadata(d)).is_dir());
  SPOOL_EXPECT_FS_ERROR(run(fs::create_dir(d)), EEXIST, "spool::fs::create_dir " + q(d));
  const auto deep = d / "x" / "y" / "z";
  run(fs::create_dir_all(deep));
  run(fs::create_dir_all(deep));  // existing: no error
  EXPECT_TRUE(run(fs::metadata(deep)).is_dir());
  run(fs::write(d / "x" / "file", std::string_view("f")));
  SPOOL_EXPECT_FS_ERROR(run(fs::create_dir_all(d / "x" / "file" / "sub")), ENOTDIR,
                        "spool::fs::create_dir_all " + q(d / "x" / "file" / "sub"));
  SPOOL_EXPECT_FS_ERROR(run(fs::remove_dir(d)), ENOTEMPTY, "spool::fs::remove_dir " + q(d));
  SPOOL_EXPECT_FS_ERROR(run(fs::remove_dir(d / "x" / "file")), ENOTDIR,
                        "spool::fs::remove_dir " + q(d / "x" / "file"));
  // A symlink inside to a directory outside: removed, never followed.
  const auto outside = dir() / "outside";
  run(fs::create_dir(outside));
  run(fs::write(outside / "keep", std::string_view("k")));
  run(fs::symlink(outside, d / "x" / "link"));
  SPOOL_EXPECT_FS_ERROR(run(fs::remove_dir_all(d / "x" / "file")), ENOTDIR,
                        "spool::fs::remove_dir_all " + q(d / "x" / "file"));
  run(fs::remove_dir_all(d));
  SPOOL_EXPECT_FS_ERROR(run(fs::metadata(d)), ENOENT, "spool::fs::metadata " + q(d));
  EXPECT_EQ(run(fs::read_to_string(outside / "keep")), "k");
  SPOOL_EXPECT_FS_ERROR(run(fs::remove_dir_all(d)), ENOENT, "spool::fs::remove_dir_all " + q(d));
}

// A symlink named with a trailing slash or "/." is still the link: nothing of the directory
// it points to is removed (lstat of "link/" follows it, so the path is cut first).
TEST_P(FsOps, RemoveDirAllNeverFollowsASymlinkNamedWithATrailingSlash) {
  const auto outside = dir() / "outside";
  run(fs::create_dir(outside));
  run(fs::write(outside / "keep", std::string_view("k")));
  const auto link = dir() / "link";
  run(fs::symlink(outside, link));
  for (const std::string suffix : {"", "/", "//"}) {
    const std::filesystem::path named = link.string() + suffix;
    SPOOL_EXPECT_FS_ERROR(run(fs::remove_dir_all(named)), ENOTDIR,
                          "spool::fs::remove_dir_all " + q(named));
  }
  for (const std::string suffix : {"/.", "/.."}) {
    const std::filesystem::path named = link.string() + suffix;
    SPOOL_EXPECT_FS_ERROR(run(fs::remove_dir_all(named)), EINVAL,
                          "spool::fs::remove_dir_all " + q(named));
  }
  EXPECT_EQ(run(fs::read_to_string(outside / "keep")), "k");
  EXPECT_TRUE(run(fs::symlink_metadata(link)).is_symlink());
  run(fs::remove_dir_all(outside.string() + "/"));  // a real directory: the slash is fine
  SPOOL_EXPECT_FS_ERROR(run(fs::metadata(outside)), ENOENT, "spool::fs::metadata " + q(outside));
}

// A path with a NUL byte is refused by every call before the kernel sees it: the kernel would
// take the bytes before the NUL, another file ("victim" here), and act on it.
TEST_P(FsOps, APathWithANulByteIsRefusedAndNoOtherFileTouched) {
  const auto victim = dir() / "victim";
  run(fs::write(victim, std::string_view("precious")));
  const auto mode = run(fs::metadata(victim)).permissions().mode();
  const std::filesystem::path nul = victim.string() + std::string("\0.bak", 5);
  const auto expect_refused = [&](auto&& call, const char* name) {
    try {
      call();
      ADD_FAILURE() << name << " did not throw";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(
          std::string(e.what()).find(std::string(name) + " \"" + victim.string() + "\\0.bak\""),
          std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("NUL byte"), std::string::npos) << e.what();
    }
  };
  expect_refused([&] { run(fs::write(nul, std::string_view("clobbered"))); }, "spool::fs::write");
  expect_refused([&] { run(fs::read(nul)); }, "spool::fs::read");
  expect_refused([&] { run(fs::read_to_string(nul)); }, "spool::fs::read_to_string");
  expect_refused([&] { run(fs::metadata(nul)); }, "spool::fs::metadata");
  expect_refused([&] { run(fs::symlink_metadata(nul)); }, "spool::fs::symlink_metadata");
  expect_refused([&] { run(fs::File::open(nul)); }, "spool::fs::open");
  expect_refused([&] { run(fs::File::create(nul)); }, "spool::fs::open");
  expect_refused([&] { run(fs::read_dir(nul)); }, "spool::fs::read_dir");
  expect_refused([&] { run(fs::copy(victim, nul)); }, "spool::fs::copy");
  expect_refused([&] { run(fs::rename(nul, dir() / "other")); }, "spool::fs::rename");
  expect_refused([&] { run(fs::remove_file(nul)); }, "spool::fs::remove_file");
  expect_refused([&] { run(fs::create_dir(nul)); }, "spool::fs::create_dir");
  expect_refused([&] { run(fs::create_dir_all(nul)); }, "spool::fs::create_dir_all");
  expect_refused([&] { run(fs::remove_dir(nul)); }, "spool::fs::remove_dir");
  expect_refused([&] { run(fs::remove_dir_all(nul)); }, "spool::fs::remove_dir_all");
  expect_refused([&] { run(fs::canonicalize(nul)); }, "spool::fs::canonicalize");
  expect_refused([&] { run(fs::hard_link(victim, nul)); }, "spool::fs::hard_link");
  expect_refused([&] { run(fs::symlink(victim, nul)); }, "spool::fs::symlink");
  expect_refused([&] { run(fs::set_permissions(nul, fs::Permissions(0600))); },
                 "spool::fs::set_permissions");
  EXPECT_EQ(run(fs::read_to_string(victim)), "precious");
  EXPECT_EQ(run(fs::metadata(victim)).permissions().mode(), mode);
  SPOOL_EXPECT_FS_ERROR(run(fs::metadata(dir() / "other")), ENOENT,
                        "spool::fs::metadata " + q(dir() / "other"));
}

TEST_P(FsOps, IsADirectory) {
  SPOOL_EXPECT_FS_ERROR(run(fs::read(dir())), EISDIR, "spool::fs::read " + q(dir()));
  SPOOL_EXPECT_FS_ERROR(run(fs::read_to_string(dir())), EISDIR,
                        "spool::fs::read_to_string " + q(dir()));
  SPOOL_EXPECT_FS_ERROR(run(fs::write(dir(), std::string_view("x"))), EISDIR,
                        "spool::fs::write " + q(dir()));
}

TEST_P(FsOps, PermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root passes every permission check";
  const auto p = dir() / "secret";
  run(fs::write(p, std::string_view("s")));
  run(fs::set_permissions(p, fs::Permissions(0)));
  EXPECT_EQ(run(fs::metadata(p)).permissions(), fs::Permissions(0));
  SPOOL_EXPECT_FS_ERROR(run(fs::read(p)), EACCES, "spool::fs::read " + q(p));
  SPOOL_EXPECT_FS_ERROR(run(fs::File::open(p)), EACCES, "spool::fs::open " + q(p));
}

TEST_P(FsOps, PermissionsRoundTrip) {
  const auto p = dir() / "perm";
  run(fs::write(p, std::string_view("p")));
  fs::Permissions perms = run(fs::metadata(p)).permissions();
  perms.set_readonly(true);
  EXPECT_TRUE(perms.readonly());
  run(fs::set_permissions(p, perms));
  EXPECT_TRUE(run(fs::metadata(p)).permissions().readonly());
  run(fs::set_permissions(p, fs::Permissions(0751)));
  EXPECT_EQ(run(fs::metadata(p)).permissions().mode(), 0751u);
}

// ENOSPC: /dev/full refuses every write with it.
TEST_P(FsOps, NoSpaceLeftOnDevice) {
  SPOOL_EXPECT_FS_ERROR(run(fs::write("/dev/full", std::string_view("x"))), ENOSPC,
                        "spool::fs::write \"/dev/full\"");
  SPOOL_EXPECT_FS_ERROR(run([]() -> Task<void> {
                          fs::File f = co_await fs::OpenOptions().write(true).open("/dev/full");
                          co_await f.write_all(std::string_view("x"));
                        }()),
                        ENOSPC, "spool::fs::File::write_all \"/dev/full\"");
}

// A File's write_all at its position under the limit: the error, and the position after it.
Task<std::pair<int, std::uint64_t>> write_all_past_the_limit(std::filesystem::path p) {
  fs::File f = co_await fs::File::create(p);
  int error = 0;
  try {
    co_await f.write_all(pattern(10'000));
  } catch (const std::system_error& e) {
    error = e.code().value();
  }
  co_return std::pair{error, co_await f.seek(0, fs::SeekFrom::kCurrent)};
}

// A file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored): a write past it fails with EFBIG, the
// error a full quota-like limit gives, after the bytes that fit, whole or at the position.
// At the position on a ring too: there Linux (seen on 6.18) leaves the position of a write
// that the limit cut short, and the next part would have written over the first.
TEST_P(FsOps, FileSizeLimit) {
  const auto p = dir() / "limited";
  const auto at_position = dir() / "at_position";
  std::pair<int, std::uint64_t> at_position_result;
  {
    const spool_fs_test::FileSizeLimitGuard limit(4096);
    SPOOL_EXPECT_FS_ERROR(run(fs::write(p, pattern(10'000))), EFBIG, "spool::fs::write " + q(p));
    at_position_result = run(write_all_past_the_limit(at_position));
  }
  EXPECT_EQ(run(fs::metadata(p)).len(), 4096u);
  EXPECT_EQ(at_position_result, (std::pair<int, std::uint64_t>{EFBIG, 4096}));
  const auto written = run(fs::read(at_position));
  EXPECT_EQ(written.size(), 4096u);
  EXPECT_TRUE(written == pattern(4096)) << "the bytes that fit";
}

}  // namespace
