// spool::io::stdin / stdout / stderr with the test's own descriptors 0, 1, 2 pointed
// elsewhere for a moment: a pipe is polled (opened again, so descriptor 0's flags stay as
// they were), a regular file goes to the blocking pool (inside a runtime) or a thread of its
// own (outside), and a write to a pipe with no reader is EPIPE, never SIGPIPE. A socket made
// non-blocking by someone else is waited for (poll), not an EAGAIN error.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

#include "spool/spool.hpp"
#include "support/time_helpers.hpp"

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

// The Tasks of read and write share the stream: the Stdin or StdWriter that made them may
// be gone before they run. (Had a Task kept a pointer to its handle, ASan would report the
// use of the freed handle.)
TEST(Stdio, ATaskOutlivesTheHandleThatMadeIt) {
  int in[2];
  int out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  ASSERT_EQ(::write(in[1], "kept", 4), 4);
  std::string buf(4, '\0');
  std::size_t read = 0;
  std::size_t written = 0;
  {
    Redirect r0(STDIN_FILENO, in[0]);
    Redirect r1(STDOUT_FILENO, out[1]);
    auto reader = std::make_unique<spool::io::Stdin>(spool::io::stdin());
    auto writer = std::make_unique<spool::io::StdWriter>(spool::io::stdout());
    Task<std::size_t> read_task = reader->read_exact(buf);
    Task<std::size_t> write_task = writer->write_all(std::string_view("sent"));
    reader.reset();
    writer.reset();
    read = spool::block_on(std::move(read_task));
    written = spool::block_on(std::move(write_task));
  }
  char got[4] = {};
  EXPECT_EQ(::read(out[0], got, sizeof got), 4);
  for (const int fd : {in[0], in[1], out[0], out[1]}) ::close(fd);
  EXPECT_EQ(read, 4u);
  EXPECT_EQ(buf, "kept");
  EXPECT_EQ(written, 4u);
  EXPECT_EQ(std::string_view(got, 4), "sent");
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

// Reads exactly `n` bytes of stdin.
Task<std::string> read_stdin_exactly(std::size_t n) {
  std::string buf(n, '\0');
  co_await spool::io::stdin().read_exact(buf);
  co_return buf;
}

// Under a foreign executor with no reactor slot, a polled stdin (a pipe) whose bytes come
// only once the read has returned pending: the driver's background thread reports them.
TEST(StdioForeign, APipeUnderAnExecutorWithoutReactorSlot) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  // Counted by run_foreign (seq_cst increments, then notify); waited on by the writer.
  std::atomic<int> pending{0};
  std::string got;
  {
    Redirect r(STDIN_FILENO, fds[0]);
    std::thread writer([&] {
      pending.wait(0);
      EXPECT_EQ(::write(fds[1], "late", 4), 4);
    });
    auto task = read_stdin_exactly(4);
    got = spool_time_test::run_foreign(task, nullptr, &pending);
    writer.join();
  }
  ::close(fds[0]);
  ::close(fds[1]);
  EXPECT_EQ(got, "late");
  EXPECT_GE(pending.load(), 1);
}

// The blocking path under the same executor: the read runs on a thread of its own, whose
// end wakes the task.
TEST(StdioForeign, AFileUnderAnExecutorWithoutReactorSlot) {
  const int file = file_with("from a file");
  std::string got;
  {
    Redirect r(STDIN_FILENO, file);
    auto task = read_stdin();
    int pending_polls = 0;
    got = spool_time_test::run_foreign(task, nullptr, &pending_polls);
  }
  ::close(file);
  EXPECT_EQ(got, "from a file");
}

// True when a thread of this process is blocked in poll(2) (ppoll where there is no poll):
// the blocking path's call, waiting for readiness. (No other thread of these tests polls.)
bool a_thread_waits_in_poll() {
#ifdef SYS_poll
  constexpr long kPoll = SYS_poll;
#else
  constexpr long kPoll = SYS_ppoll;
#endif
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return false;
  bool found = false;
  while (const dirent* e = ::readdir(tasks)) {
    std::ifstream syscall_file("/proc/self/task/" + std::string(e->d_name) + "/syscall");
    long nr = -1;
    if (syscall_file >> nr && nr == kPoll) found = true;  // ("running": no number)
  }
  ::closedir(tasks);
  return found;
}

// Waits until `done` is set or a thread waits in poll: the call under test has tried once
// and either failed or waits for readiness.
void until_done_or_polling(const std::atomic<bool>& done) {
  while (!done.load() && !a_thread_waits_in_poll()) std::this_thread::yield();
}

// Stdin a non-blocking socket with nothing to read yet (not pollable through /proc: the
// blocking path): the read waits in poll until the bytes come, sent only once it does.
TEST(Stdio, ANonBlockingSocketAsStdinIsWaitedFor) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  std::string got;
  std::atomic<bool> done{false};  // seq_cst: set by the reader when it ends, read here
  {
    Redirect r(STDIN_FILENO, sv[0]);
    std::thread reader([&] {
      try {
        got = spool::block_on([]() -> Task<std::string> {
          std::string buf(5, '\0');
          co_await spool::io::stdin().read_exact(buf);
          co_return buf;
        }());
      } catch (const std::system_error& e) {
        got = e.what();
      }
      done = true;
    });
    until_done_or_polling(done);
    EXPECT_EQ(::write(sv[1], "later", 5), 5);
    reader.join();
  }
  ::close(sv[0]);
  ::close(sv[1]);
  EXPECT_EQ(got, "later");
}

// Stderr a non-blocking socket whose buffer is full: the write waits in poll until the
// reader drains it, which it does only once the write waits.
TEST(Stdio, ANonBlockingSocketAsStderrIsWaitedForWhenFull) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  std::size_t filled = 0;
  const std::string chunk(4096, 'x');
  for (ssize_t n = 0; (n = ::write(sv[0], chunk.data(), chunk.size())) > 0;) {
    filled += static_cast<std::size_t>(n);
  }
  std::string error;
  std::atomic<bool> done{false};  // seq_cst: set by the writer when it ends, read here
  std::string received;
  {
    Redirect r(STDERR_FILENO, sv[0]);
    std::thread writer([&] {
      try {
        spool::block_on(spool::io::stderr().write_all(std::string_view("after")));
      } catch (const std::system_error& e) {
        error = e.what();
      }
      done = true;
    });
    until_done_or_polling(done);
    char buf[4096];
    for (;;) {
      const bool ended = done.load();  // (then all it wrote is in the socket)
      for (ssize_t n = 0; (n = ::read(sv[1], buf, sizeof buf)) > 0;) {
        received.append(buf, static_cast<std::size_t>(n));
      }
      if (ended || received.size() >= filled + 5) break;
      pollfd in{sv[1], POLLIN, 0};
      ::poll(&in, 1, 10);  // (a wake-up to look at `done` again, not a wait for it)
    }
    writer.join();
  }
  ::close(sv[0]);
  ::close(sv[1]);
  EXPECT_EQ(error, "");
  EXPECT_TRUE(received.ends_with("after")) << received.size() << " bytes of " << filled + 5;
}

}  // namespace
