// spool::fs::read_dir over many entries (in batches: the metrics count the blocking calls),
// entry types, and 1,000 files written and read back by concurrent tasks, on every executor.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/fs.hpp"
#include "support/rt_sanitizer.hpp"

namespace {

namespace fs = spool::fs;
using spool::Task;
using spool_fs_test::Exec;
using spool_fs_test::FsTest;

class FsReadDir : public FsTest {};
SPOOL_FS_INSTANTIATE(FsReadDir);

// Every name in `d`, with the types checked to be regular files.
Task<std::set<std::string>> list_files(std::filesystem::path d) {
  std::set<std::string> names;
  fs::ReadDir rd = co_await fs::read_dir(d);
  while (std::optional<fs::DirEntry> e = co_await rd.next_entry()) {
    EXPECT_EQ(e->file_type(), std::filesystem::file_type::regular) << e->path();
    EXPECT_EQ(e->path(), d / e->file_name());
    EXPECT_TRUE(names.insert(e->file_name().string()).second) << "twice: " << e->path();
  }
  EXPECT_FALSE(co_await rd.next_entry());  // stays at the end
  co_return names;
}

// 10,000 entries on the multi-thread runtime; 1,000 (three full batches of 256 and a part) on the
// others, where the listing takes the same path.
TEST_P(FsReadDir, ManyEntriesInBatches) {
  const int files = GetParam() == Exec::kMultiThread ? 10'000 : 1'000;
  std::set<std::string> want;
  for (int i = 0; i < files; ++i) {  // empty files, made directly: the listing is the test
    const std::string name = "f" + std::to_string(i);
    const int fd = ::open((dir() / name).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
    want.insert(name);
  }
  const std::uint64_t before = fs_ops();
  EXPECT_EQ(run(list_files(dir())), want);
  if (in_runtime()) {
    // One call to open, one per batch, one to find the end: never one per entry.
    EXPECT_LE(fs_ops() - before, files / fs::ReadDir::kBatch + 3);
  }
}

// A ReadDir is a spool::Stream: collected, then at its end for good.
Task<std::set<std::string>> collect_names(std::filesystem::path d) {
  static_assert(spool::Stream<fs::ReadDir>);
  fs::ReadDir rd = co_await fs::read_dir(d);
  auto names = spool::stream::map(std::move(rd),
                                  [](const fs::DirEntry& e) { return e.file_name().string(); });
  const std::vector<std::string> all = co_await spool::stream::collect(std::move(names));
  co_return std::set<std::string>(all.begin(), all.end());
}

TEST_P(FsReadDir, IsAStreamOfItsEntries) {
  std::set<std::string> want;
  for (int i = 0; i < 300; ++i) {  // more than a batch
    const std::string name = "s" + std::to_string(i);
    const int fd = ::open((dir() / name).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::close(fd);
    want.insert(name);
  }
  EXPECT_EQ(run(collect_names(dir())), want);
}

TEST_P(FsReadDir, EntryTypesAndMetadata) {
  run([](std::filesystem::path d) -> Task<void> {
    co_await fs::create_dir(d / "sub");
    co_await fs::write(d / "file", std::string_view("12"));
    co_await fs::symlink("file", d / "link");
    EXPECT_EQ(::mkfifo((d / "fifo").c_str(), 0600), 0);
    fs::ReadDir rd = co_await fs::read_dir(d);
    int seen = 0;
    while (auto e = co_await rd.next_entry()) {
      ++seen;
      const fs::Metadata m = co_await e->metadata();
      EXPECT_EQ(m.ino(), e->ino());
      if (e->file_name() == "sub") {
        EXPECT_EQ(e->file_type(), std::filesystem::file_type::directory);
      } else if (e->file_name() == "file") {
        EXPECT_EQ(e->file_type(), std::filesystem::file_type::regular);
        EXPECT_EQ(m.len(), 2u);
      } else if (e->file_name() == "fifo") {
        EXPECT_EQ(e->file_type(), std::filesystem::file_type::fifo);
        EXPECT_EQ(m.file_type(), std::filesystem::file_type::fifo);
      } else {
        EXPECT_EQ(e->file_name(), "link");
        EXPECT_EQ(e->file_type(), std::filesystem::file_type::symlink);
        EXPECT_TRUE(m.is_symlink());  // not followed
      }
    }
    EXPECT_EQ(seen, 4);
  }(dir()));
}

TEST_P(FsReadDir, Errors) {
  const auto missing = dir() / "missing";
  SPOOL_EXPECT_FS_ERROR(run(fs::read_dir(missing)), ENOENT,
                        "spool::fs::read_dir \"" + missing.string() + "\"");
  run(fs::write(dir() / "f", std::string_view("")));
  SPOOL_EXPECT_FS_ERROR(run(fs::read_dir(dir() / "f")), ENOTDIR,
                        "spool::fs::read_dir \"" + (dir() / "f").string() + "\"");
  fs::ReadDir rd = run(fs::read_dir(dir()));
  fs::ReadDir moved = std::move(rd);
  EXPECT_THROW(run(rd.next_entry()), std::logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_TRUE(run(moved.next_entry()).has_value());
}

// A child process inherits no ReadDir: its directory's descriptor (found by its link in
// /proc/self/fd) is O_CLOEXEC.
TEST_P(FsReadDir, TheDescriptorClosesOnExec) {
  const fs::ReadDir rd = run(fs::read_dir(dir()));
  int found = 0;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(fd.path(), ec) != std::filesystem::canonical(dir())) continue;
    ++found;
    const int d = std::stoi(fd.path().filename().string());
    EXPECT_NE(::fcntl(d, F_GETFD) & FD_CLOEXEC, 0);
  }
  EXPECT_EQ(found, 1);
}

// Files written and read back by tasks that all run at once (1,000 on a runtime; 200 under
// the foreign executor, where each call is a thread of its own).
// 10,000 files written, opened and read back at once (issue 30), each open while the rest
// run: the soft descriptor limit is raised for them where it is lower (not past the hard
// one). Under the foreign executor, where each call is a thread of its own, 200; under
// TSan, 2,000.
TEST_P(FsReadDir, ConcurrentFilesFromTasks) {
  const int n = GetParam() == Exec::kForeign ? 200 : spool_rt_test::scaled(10'000, 2'000);
  rlimit lim{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &lim), 0);
  const rlim_t want = static_cast<rlim_t>(n) + 512;
  if (lim.rlim_cur < want) {
    if (lim.rlim_max < want) GTEST_SKIP() << "RLIMIT_NOFILE's hard limit is below " << want;
    lim.rlim_cur = want;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
  }
  auto one = [](std::filesystem::path p, int i) -> Task<bool> {
    const std::string content = "file " + std::to_string(i) + std::string(i % 97, '.');
    co_await fs::write(p, content);
    fs::File f = co_await fs::File::open(p);
    std::string in(content.size(), '\0');
    co_await f.read_exact(in);
    if (in != content) co_return false;
    co_return co_await fs::read_to_string(p) == content;
  };
  std::vector<Task<bool>> tasks;
  for (int i = 0; i < n; ++i) tasks.push_back(one(dir() / ("c" + std::to_string(i)), i));
  const std::vector<bool> ok = run([](std::vector<Task<bool>> tasks) -> Task<std::vector<bool>> {
    co_return co_await spool::when_all(std::move(tasks));
  }(std::move(tasks)));
  EXPECT_EQ(std::count(ok.begin(), ok.end(), true), n);
  EXPECT_EQ(run(list_files(dir())).size(), static_cast<std::size_t>(n));
}

}  // namespace
