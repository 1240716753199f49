// spool::pipe(): 1 MiB each way between two tasks at once (neither deadlocks on a full
// pipe) on both flavours and under a foreign executor; the end of the stream; EPIPE
// without SIGPIPE; BufReader over a pipe; from_fd's checks.
// (ctest runs this binary again with SPOOL_IO_BACKEND=io_uring.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "support/net.hpp"
#include "support/rt_flavor.hpp"
#include "support/time_helpers.hpp"

namespace {

using spool::PipeReader;
using spool::PipeWriter;
using spool::Task;
using spool_net_test::pattern;

constexpr std::size_t kMiB = 1024 * 1024;

// Writes `out` to `w` (then closes it) while reading `r` to its end: what was read.
Task<std::vector<std::uint8_t>> write_and_read(PipeWriter w, PipeReader r,
                                               std::vector<std::uint8_t> out) {
  auto writer = [](PipeWriter w, std::vector<std::uint8_t> out) -> Task<std::size_t> {
    co_return co_await w.write_all(std::span<const std::uint8_t>(out));
  };
  auto reader = [](PipeReader r) -> Task<std::vector<std::uint8_t>> {
    std::vector<std::uint8_t> in;
    std::vector<std::uint8_t> buf(64 * 1024);
    while (const std::size_t n = co_await r.read(buf))
      in.insert(in.end(), buf.begin(), buf.begin() + n);
    co_return in;
  };
  auto [written, in] =
      co_await spool::when_all(writer(std::move(w), std::move(out)), reader(std::move(r)));
  EXPECT_EQ(written, kMiB);
  co_return std::move(in);
}

// Two pipes, one each way: each side writes 1 MiB (16 times a pipe's buffer) while it reads
// the other's 1 MiB. Both finish only if neither write blocks the other side's reads.
Task<bool> both_ways() {
  auto [a_in, b_out] = spool::pipe();
  auto [b_in, a_out] = spool::pipe();
  auto [from_b, from_a] =
      co_await spool::when_all(write_and_read(std::move(a_out), std::move(a_in), pattern(kMiB, 1)),
                               write_and_read(std::move(b_out), std::move(b_in), pattern(kMiB, 2)));
  co_return from_b == pattern(kMiB, 2) && from_a == pattern(kMiB, 1);
}

class PipeFlavor : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(PipeFlavor);

TEST_P(PipeFlavor, OneMebibyteEachWayAtOnce) {
  auto rt = build();
  EXPECT_TRUE(wait(rt, rt.spawn(both_ways())));
}

// Outside every runtime, with no reactor slot: the background driver reports the edges.
TEST(PipeForeign, OneMebibyteEachWayUnderAnExecutorWithoutReactorSlot) {
  auto task = both_ways();
  int pending_polls = 0;
  EXPECT_TRUE(spool_time_test::run_foreign(task, nullptr, &pending_polls));
  EXPECT_GE(pending_polls, 1);  // a full pipe made a write wait
}

TEST(PipeForeign, UnderBlockOn) { EXPECT_TRUE(spool::block_on(both_ways())); }

// A reader reads what was written, then 0 once the writer is closed.
TEST(Pipe, ReaderSeesTheEndAfterTheWriterCloses) {
  spool::block_on([]() -> Task<void> {
    auto [r, w] = spool::pipe();
    co_await w.write_all(std::string_view("last words"));
    w.close();
    std::string in(10, '\0');
    co_await r.read_exact(in);
    EXPECT_EQ(in, "last words");
    char more = 0;
    EXPECT_EQ(co_await r.read(std::span(&more, 1)), 0u);
  }());
}

// A write after the reader closed fails with EPIPE; the process is not killed (SIGPIPE
// keeps its default action here) and no SIGPIPE is left pending. (The read end is a plain
// descriptor: on io_uring, a registered one closed off the thread that watches it is
// released a moment later, docs/io.md.)
TEST(Pipe, WriteAfterTheReaderClosedIsEpipeWithoutSigpipe) {
  ASSERT_EQ(::signal(SIGPIPE, SIG_DFL), SIG_DFL);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  spool::block_on([](int wfd) -> Task<void> {
    PipeWriter w = PipeWriter::from_fd(wfd);
    try {
      co_await w.write_all(std::string_view("nobody reads this"));
      ADD_FAILURE() << "the write succeeded";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code(), std::errc::broken_pipe) << e.what();
      EXPECT_NE(std::string(e.what()).find("spool::PipeWriter::write"), std::string::npos);
    }
  }(fds[1]));
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
}

// BufReader reads lines from a pipe as from a socket.
TEST(Pipe, BufReaderReadsLines) {
  spool::block_on([]() -> Task<void> {
    auto [r, w] = spool::pipe();
    co_await w.write_all(std::string_view("one\ntwo\n"));
    w.close();
    spool::net::BufReader<PipeReader> in(std::move(r));
    std::string line;
    co_await in.read_line(line);
    EXPECT_EQ(line, "one\n");
    line.clear();
    co_await in.read_line(line);
    EXPECT_EQ(line, "two\n");
  }());
}

// from_fd takes a pipe end made elsewhere, and refuses what is not one (closing it).
TEST(Pipe, FromFdChecksWhatItTakes) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);  // blocking, as a pipe from another library may be
  spool::block_on([](int rfd, int wfd) -> Task<void> {
    PipeWriter w = PipeWriter::from_fd(wfd);
    PipeReader r = PipeReader::from_fd(rfd);
    EXPECT_NE(::fcntl(r.fd(), F_GETFL) & O_NONBLOCK, 0);
    co_await w.write_all(std::string_view("x"));
    char c = 0;
    EXPECT_EQ(co_await r.read(std::span(&c, 1)), 1u);
  }(fds[0], fds[1]));
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  try {
    (void)PipeReader::from_fd(sv[0]);
    ADD_FAILURE() << "a socket was taken for a pipe";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("is no pipe or FIFO"), std::string::npos) << e.what();
  }
  EXPECT_LT(::fcntl(sv[0], F_GETFD), 0);  // closed, as the header says
  ::close(sv[1]);
  ASSERT_EQ(::pipe(fds), 0);
  try {
    (void)PipeReader::from_fd(fds[1]);
    ADD_FAILURE() << "a write end was taken for a read end";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("is a pipe's write end; it takes a pipe's read end"),
              std::string::npos)
        << e.what();
  }
  ::close(fds[0]);
}

// An end a PipeReader owns, handed to from_fd again, is refused with EEXIST and left open.
TEST(Pipe, FromFdRefusesAnEndAPipeOwnsAlreadyAndLeavesItOpen) {
  spool::block_on([]() -> Task<void> {
    auto [r, w] = spool::pipe();
    EXPECT_THROW((void)PipeReader::from_fd(r.fd()), std::system_error);
    EXPECT_THROW((void)PipeReader::from_fd(w.fd()), std::system_error);  // a write end, owned
    co_await w.write_all(std::string_view("x"));
    char c = 0;
    EXPECT_EQ(co_await r.read(std::span(&c, 1)), 1u);
  }());
}

}  // namespace
