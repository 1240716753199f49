// A child's piped stdio: stdin to stdout through `cat`, 1 MiB each way at once (the parent
// writes while it reads, so neither side blocks on a full pipe), wait_with_output and
// Command::output (stdout and stderr collected together), null stdio — on both flavours.
// (ctest runs this binary again with SPOOL_IO_BACKEND=io_uring.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spool/spool.hpp"
#include "support/hand_poll.hpp"
#include "support/net.hpp"
#include "support/rt_flavor.hpp"

namespace {

using spool::Task;
using spool::process::Child;
using spool::process::Command;
using spool::process::ExitStatus;
using spool::process::Output;
using spool::process::Stdio;

constexpr std::size_t kMiB = 1024 * 1024;

class ProcessPipes : public spool_rt_test::RtFlavorTest {};
SPOOL_RT_INSTANTIATE_FLAVORS(ProcessPipes);

// Everything `r` gives until its end.
Task<std::vector<std::uint8_t>> read_all(spool::PipeReader r) {
  std::vector<std::uint8_t> in;
  std::vector<std::uint8_t> buf(64 * 1024);
  while (const std::size_t n = co_await r.read(buf))
    in.insert(in.end(), buf.begin(), buf.begin() + n);
  co_return in;
}

// Writes `data` to `w`, then closes it (cat then ends its output).
Task<void> write_all(spool::PipeWriter w, std::vector<std::uint8_t> data) {
  co_await w.write_all(std::span<const std::uint8_t>(data));
}

// 1 MiB through `cat`: written to its stdin while its stdout is read. Had the parent written
// everything first, cat would block on its full stdout pipe and the parent on cat's stdin.
Task<bool> mebibyte_through_cat() {
  Child cat = Command("cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
  const std::vector<std::uint8_t> data = spool_net_test::pattern(kMiB, 3);
  auto [none, echoed] = co_await spool::when_all(write_all(std::move(*cat.stdin), data),
                                                 read_all(std::move(*cat.stdout)));
  const ExitStatus s = co_await cat.wait();
  co_return s.success() && echoed == data;
}

TEST_P(ProcessPipes, OneMebibyteThroughCatBothWaysAtOnce) {
  auto rt = build();
  EXPECT_TRUE(wait(rt, rt.spawn(mebibyte_through_cat())));
}

TEST_P(ProcessPipes, StdinToStdoutThroughCat) {
  auto rt = build();
  const std::string out = wait(rt, rt.spawn([]() -> Task<std::string> {
    Child cat = Command("cat").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
    co_await cat.stdin->write_all(std::string_view("a line for cat\n"));
    Output o = co_await std::move(cat).wait_with_output();  // closes stdin first
    EXPECT_TRUE(o.status.success());
    co_return o.stdout;
  }()));
  EXPECT_EQ(out, "a line for cat\n");
}

// wait_with_output reads both pipes at once: a child that fills stderr (beyond a pipe's
// 64 KiB) before it writes stdout does not deadlock.
TEST_P(ProcessPipes, WaitWithOutputCollectsBothStreams) {
  auto rt = build();
  const Output o = wait(rt, rt.spawn([]() -> Task<Output> {
    co_return co_await Command("sh")
        .arg("-c")
        .arg("head -c 200000 /dev/zero >&2; echo out; exit 3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .wait_with_output();
  }()));
  EXPECT_EQ(o.status.code(), 3);
  EXPECT_EQ(o.stdout, "out\n");
  EXPECT_EQ(o.stderr.size(), 200000u);
}

// A grandchild that inherited the child's stdout holds the pipe open after the child
// exited: wait_with_output reads on until the grandchild closes it too (docs/process.md).
// The grandchild (`cat fifo`) writes and exits only once the test opens the FIFO.
TEST(ProcessOutput, AGrandchildHoldingStdoutKeepsWaitWithOutputReading) {
  const std::string fifo = "/tmp/spool-grandchild-" + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  Child sh =
      Command("sh").arg("-c").arg("echo child; cat " + fifo + " &").stdout(Stdio::piped()).spawn();
  const pid_t pid = *sh.id();
  Task<Output> output = std::move(sh).wait_with_output();
  spool_test::HandPoller poller;
  EXPECT_TRUE(poller.poll(output).is_pending());
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);  // sh exited
  EXPECT_TRUE(poller.poll(output).is_pending());  // its stdout is still open in the grandchild
  const int fd = ::open(fifo.c_str(), O_WRONLY);  // (waits for cat to open it)
  EXPECT_EQ(::write(fd, "grandchild\n", 11), 11);
  ::close(fd);  // cat copies the line and exits: the pipe's last writer is gone
  const Output o = spool::block_on(std::move(output));
  ::unlink(fifo.c_str());
  EXPECT_TRUE(o.status.success());
  EXPECT_EQ(o.stdout, "child\ngrandchild\n");
}

// output() pipes stdout and stderr and gives the child a null stdin (cat ends at once).
TEST(ProcessOutput, DefaultsPipeOutputAndNullInput) {
  const Output o = spool::block_on(Command("sh").arg("-c").arg("cat; echo err >&2").output());
  EXPECT_TRUE(o.status.success());
  EXPECT_EQ(o.stdout, "");
  EXPECT_EQ(o.stderr, "err\n");
  // A stream not piped is "" in the output, and null discards.
  const Output quiet =
      spool::block_on(Command("sh").arg("-c").arg("echo gone").stdout(Stdio::null()).output());
  EXPECT_EQ(quiet.stdout, "");
}

}  // namespace
