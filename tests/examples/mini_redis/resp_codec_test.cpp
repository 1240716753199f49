// mini-redis's RespCodec at the end of a client's stream: the whole commands are read, a
// partial last one is dropped without an error (a client may close mid-command).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "memory_budget.hpp"
#include "resp_codec.hpp"
#include "spool/codec.hpp"
#include "spool/core/context.hpp"
#include "spool/core/waker.hpp"
#include "support/scripted_bytes.hpp"

namespace {

// The commands a FramedRead of RespCodec reads from `input` until its end (ScriptedBytes
// never pends unless asked, so one poll is ready).
std::vector<mini_redis::Command> read_all(std::string input) {
  mini_redis::MemoryBudget budget(1 << 20);
  spool::codec::FramedRead framed(spool_test::ScriptedBytes(std::move(input)),
                                  mini_redis::RespCodec({}, 1 << 20, budget));
  const spool::Waker waker = spool::Waker::noop();
  spool::Context cx(waker);
  std::vector<mini_redis::Command> out;
  for (;;) {
    auto command = framed.poll_next(cx).value();
    if (!command) return out;
    out.push_back(command->get());
  }
}

TEST(RespCodec, AClientClosingMidCommandEndsTheStreamAfterItsWholeCommands) {
  EXPECT_EQ(read_all("*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$2\r\nk"),
            (std::vector<mini_redis::Command>{{"PING"}}));
}

TEST(RespCodec, AClientClosingBetweenCommandsEndsTheStream) {
  EXPECT_EQ(read_all("*1\r\n$4\r\nPING\r\n"), (std::vector<mini_redis::Command>{{"PING"}}));
}

}  // namespace
