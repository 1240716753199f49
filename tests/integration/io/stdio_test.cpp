// spool::io::stdin / stdout / stderr with the test's own descriptors 0, 1, 2 pointed
// elsewhere for a moment: a pipe is polled (opened again, so descriptor 0's flags stay as
// they were), a regular file goes to the blocking pool (inside a runtime) or a thread of its
// own (outside), and a write to a pipe with no reader is EPIPE, never SIGPIPE.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>

#include "spool/spool.hpp"

namespace {

using spool::Task;

// Points descriptor `target` at `fd` until destroyed, then back where it was.
class Redirect {
 public:
  Redirect(int target, int fd) : target_(target), saved_(::dup(target)) {
    EXPECT_GE(saved_, 0);
    EXPECT_EQ(::dup2(fd, target), target);
  }
  ~Redirect() {
    ::dup2(saved_, target_);
    ::close(saved_);
  }
  Redirect(const Redirect&) = delete;
  Redirect& operator=(const Redirect&) = delete;

 private:
  int target_;
  int saved_;
};

// A new unlinked file holding `text`, its offset at the start.
int file_with(std::string_view text) {
  char path[] = "/tmp/spool-stdio-XXXXXX";
  const int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  ::unlink(path);
  EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

// Everything `fd` holds from its start.
std::string contents(int fd) {
  ::lseek(fd, 0, SEEK_SET);
  std::string out;
  char buf[256];
  while (const ssize_t n = ::read(fd, buf, sizeof buf)) {
    if (n < 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// Reads stdin to its end.
Task<std::string> read_stdin() {
  spool::io::Stdin in = spool::io::stdin();
  std::string all;
  std::string buf(4, '\0');  // small: several reads
  while (const std::size_t n = co_await in.read(buf)) all.append(buf, 0, n);
  co_return all;
}

TEST(Stdio, StdinFromAPipeIsPolledAndLeavesDescriptorZeroAlone) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "through a pipe", 14), 14);
  ::close(fds[1]);
  std::string got;
  bool polled = false;
  int flags = 0;
  {
    Redirect r(STDIN_FILENO, fds[0]);
    polled = spool::io::stdin().polled();
    got = spool::block_on(read_stdin());
    flags = ::fcntl(STDIN_FILENO, F_GETFL);
  }
  ::close(fds[0]);
  EXPECT_TRUE(polled);
  EXPECT_EQ(got, "through a pipe");
  EXPECT_EQ(flags & O_NONBLOCK, 0);  // the reopened file was made non-blocking, not fd 0
}

TEST(Stdio, StdinFromAFileRunsOnTheBlockingPool) {
  const int file = file_with("from a regular file");
  std::string in_runtime;
  std::string outside;
  bool polled = true;
  {
    Redirect r(STDIN_FILENO, file);
    polled = spool::io::stdin().polled();
    auto rt = spool::Builder::multi_thread().worker_threads(1).build();
    in_runtime = rt.block_on(read_stdin());
    ::lseek(file, 0, SEEK_SET);
    outside = spool::block_on(read_stdin());  // a thread of its own
  }
  ::close(file);
  EXPECT_FALSE(polled);
  EXPECT_EQ(in_runtime, "from a regular file");
  EXPECT_EQ(outside, "from a regular file");
}

TEST(Stdio, ReadExactPastTheEndOfAFileThrows) {
  const int file = file_with("short");
  std::string message;
  {
    Redirect r(STDIN_FILENO, file);
    spool::block_on([](std::string& message) -> Task<void> {
      spool::io::Stdin in = spool::io::stdin();
      std::string buf(10, '\0');
      try {
        co_await in.read_exact(buf);
      } catch (const spool::net::UnexpectedEof& e) {
        message = e.what();
      }
    }(message));
  }
  ::close(file);
  EXPECT_NE(message.find("spool::io::Stdin::read: the input ended after 5 of the 10 bytes"),
            std::string::npos)
      << message;
}

TEST(Stdio, StderrToAPipeIsPolled) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  bool polled = false;
  {
    Redirect r(STDERR_FILENO, fds[1]);
    spool::io::StdWriter err = spool::io::stderr();
    polled = err.polled();
    spool::block_on(err.write_all(std::string_view("to stderr")));
  }
  ::close(fds[1]);
  char buf[16] = {};
  EXPECT_EQ(::read(fds[0], buf, sizeof buf), 9);
  ::close(fds[0]);
  EXPECT_TRUE(polled);
  EXPECT_EQ(std::string_view(buf), "to stderr");
}

TEST(Stdio, StdoutToAFileRunsOnTheBlockingPool) {
  const int file = file_with("");
  bool polled = true;
  {
    Redirect r(STDOUT_FILENO, file);
    auto rt = spool::Builder::current_thread().build();
    rt.block_on([](bool& polled) -> Task<void> {
      spool::io::StdWriter out = spool::io::stdout();
      polled = out.polled();
      co_await out.write_all(std::string_view("to a file"));
    }(polled));
  }
  EXPECT_FALSE(polled);
  EXPECT_EQ(contents(file), "to a file");
  ::close(file);
}

// A pipe whose reader is gone cannot be opened again (ENXIO), so the write goes to the
// blocking pool's thread, which must not die of SIGPIPE either.
TEST(Stdio, WriteToAPipeWithoutReaderIsEpipe) {
  ASSERT_EQ(::signal(SIGPIPE, SIG_DFL), SIG_DFL);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  std::error_code code;
  {
    Redirect r(STDERR_FILENO, fds[1]);
    auto rt = spool::Builder::multi_thread().worker_threads(1).build();
    rt.block_on([](std::error_code& code) -> Task<void> {
      try {
        co_await spool::io::stderr().write_all(std::string_view("lost"));
      } catch (const std::system_error& e) {
        code = e.code();
      }
    }(code));
  }
  ::close(fds[1]);
  EXPECT_EQ(code, std::errc::broken_pipe);
}

}  // namespace
