// mini-redis's RESP2 parser: whole and partial commands (and a partial one parsed where the
// last read stopped), pipelines, inline commands, every
// malformed-input error, the limits (checked before allocating), and the reply writers.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "resp.hpp"

namespace {

using mini_redis::Limits;
using mini_redis::parse_command;
using mini_redis::ProtocolError;

mini_redis::Parsed parse(std::string_view s, const Limits& l = {}) {
  return parse_command(std::span<const char>(s.data(), s.size()), l);
}

TEST(Resp, ParsesAnArrayOfBulkStrings) {
  const std::string_view cmd = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n";
  const auto p = parse(cmd);
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.consumed, cmd.size());
  EXPECT_EQ(p.args, (mini_redis::Command{"SET", "key", "va\r\nl"}));  // binary-safe
}

TEST(Resp, EveryPrefixOfACommandIsIncompleteAndTheWholeIsComplete) {
  const std::string cmd = "*2\r\n$4\r\nECHO\r\n$11\r\nhello world\r\n";
  for (std::size_t n = 0; n < cmd.size(); ++n) {
    EXPECT_FALSE(parse(std::string_view(cmd).substr(0, n)).complete) << n;
  }
  EXPECT_TRUE(parse(cmd).complete);
}

// A connection parses every command into the same Parsed: each result is that command's
// alone, whether the previous one had more arguments, fewer, longer ones, or was inline, or
// was incomplete.
TEST(Resp, AReusedParsedHoldsOnlyTheLastCommand) {
  mini_redis::Parsed p;
  const auto into = [&](std::string_view s) {
    parse_command(std::span<const char>(s.data(), s.size()), Limits{}, p);
  };
  into("*3\r\n$3\r\nSET\r\n$21\r\nkey:00000000000000001\r\n$3\r\nabc\r\n");
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.args, (mini_redis::Command{"SET", "key:00000000000000001", "abc"}));
  into("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.args, (mini_redis::Command{"GET", "k"}));
  into("*2\r\n$4\r\nECHO\r\n$5\r\nhel");  // incomplete: goes on with the same bytes
  EXPECT_FALSE(p.complete);
  EXPECT_EQ(p.consumed, 0u);
  into("*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n");
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.args, (mini_redis::Command{"ECHO", "hello"}));
  into("PING  a\r");  // an incomplete inline line, then the same line whole
  EXPECT_FALSE(p.complete);
  into("PING  a\r\n");
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.consumed, 9u);
  EXPECT_EQ(p.args, (mini_redis::Command{"PING", "a"}));
  into("\r\n");  // an empty inline line: no arguments
  ASSERT_TRUE(p.complete);
  EXPECT_TRUE(p.args.empty());
}

// A command that arrives a few bytes at a time, each read parsed into the same Parsed (as a
// connection does), is parsed once: each call goes on from the first argument not yet
// found, instead of walking again every header before it.
TEST(Resp, ACommandArrivingByteByByteIsParsedFromWhereTheLastReadStopped) {
  const std::string cmd = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n";
  const std::size_t third = cmd.find("$5");
  mini_redis::Parsed p;
  for (std::size_t n = 0; n < cmd.size(); ++n) {
    parse_command(std::span<const char>(cmd.data(), n), Limits{}, p);
    ASSERT_FALSE(p.complete) << n;
    if (n > third) {  // SET and k were found once, and are not looked at again
      EXPECT_EQ(p.spans.size(), 2u) << n;
      EXPECT_EQ(p.resume, third) << n;
    }
  }
  parse_command(std::span<const char>(cmd.data(), cmd.size()), Limits{}, p);
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.consumed, cmd.size());
  EXPECT_EQ(p.args, (mini_redis::Command{"SET", "k", "value"}));
  EXPECT_EQ(p.resume, 0u);  // the next command starts afresh
  // An inline line: searched for its end once, byte after byte.
  const std::string line = "ECHO hi\r\n";
  for (std::size_t n = 1; n < line.size(); ++n) {
    parse_command(std::span<const char>(line.data(), n), Limits{}, p);
    ASSERT_FALSE(p.complete) << n;
    EXPECT_EQ(p.resume, n) << n;
  }
  parse_command(std::span<const char>(line.data(), line.size()), Limits{}, p);
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.args, (mini_redis::Command{"ECHO", "hi"}));
}

// An incomplete command says how many bytes it takes at least, as far as its headers tell:
// a connection grows its buffer to that, not to twice its size.
TEST(Resp, AnIncompleteCommandSaysHowManyBytesItNeedsAtLeast) {
  const std::string cmd =
      "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + std::string(100000, 'v') + "\r\n";
  const std::size_t value = cmd.find("$100000") + 9;  // where the value's bytes start
  mini_redis::Parsed p;
  parse_command(std::span<const char>(cmd.data(), 3), Limits{}, p);
  EXPECT_EQ(p.needed, 0u);  // no length seen yet
  for (const std::size_t n : {value, value + 1, cmd.size() - 1}) {
    parse_command(std::span<const char>(cmd.data(), n), Limits{}, p);
    ASSERT_FALSE(p.complete) << n;
    EXPECT_EQ(p.needed, cmd.size()) << n;
  }
  parse_command(std::span<const char>(cmd.data(), cmd.size()), Limits{}, p);
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.needed, 0u);
}

// What the parser has passed over is not read again: a byte changed before `resume` goes
// unseen (the same bytes must come again, see parse_command; this shows they are not
// reparsed, where starting over would throw or end the line early).
TEST(Resp, BytesBeforeWhereTheLastReadStoppedAreNotReadAgain) {
  mini_redis::Parsed p;
  std::string cmd = "*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n";
  parse_command(std::span<const char>(cmd.data(), cmd.find("$2") + 1), Limits{}, p);
  ASSERT_FALSE(p.complete);
  cmd[cmd.find("$4")] = 'x';  // no longer an argument's header
  parse_command(std::span<const char>(cmd.data(), cmd.size()), Limits{}, p);
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.args, (mini_redis::Command{"ECHO", "hi"}));
  std::string line = "ECHO a b\r\n";
  parse_command(std::span<const char>(line.data(), 6), Limits{}, p);
  ASSERT_FALSE(p.complete);
  line[4] = '\n';  // would end the line there
  parse_command(std::span<const char>(line.data(), line.size()), Limits{}, p);
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.consumed, line.size());
  EXPECT_EQ(p.args, (mini_redis::Command{"ECHO", "a", "b"}));
}

// After a ProtocolError, the next call starts afresh.
TEST(Resp, AfterAProtocolErrorTheNextCommandIsParsedAfresh) {
  mini_redis::Parsed p;
  const std::string partial = "*2\r\n$4\r\nECHO\r\n$";
  parse_command(std::span<const char>(partial.data(), partial.size()), Limits{}, p);
  ASSERT_FALSE(p.complete);
  const std::string bad = "*2\r\n$4\r\nECHO\r\n$x\r\n";
  EXPECT_THROW(parse_command(std::span<const char>(bad.data(), bad.size()), Limits{}, p),
               ProtocolError);
  const std::string ping = "PING\r\n";
  parse_command(std::span<const char>(ping.data(), ping.size()), Limits{}, p);
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.args, (mini_redis::Command{"PING"}));
}

TEST(Resp, APipelineIsParsedOneCommandAtATime) {
  const std::string buf = "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4";
  auto p = parse(buf);
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.args, (mini_redis::Command{"PING"}));
  auto q = parse(std::string_view(buf).substr(p.consumed));
  ASSERT_TRUE(q.complete);
  EXPECT_EQ(q.args, (mini_redis::Command{"GET", "k"}));
  EXPECT_FALSE(parse(std::string_view(buf).substr(p.consumed + q.consumed)).complete);
}

TEST(Resp, InlineCommandsSplitOnSpaces) {
  auto p = parse("PING\r\n");
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.args, (mini_redis::Command{"PING"}));
  p = parse("  SET  k   v \r\nrest");
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.consumed, 15u);
  EXPECT_EQ(p.args, (mini_redis::Command{"SET", "k", "v"}));
  p = parse("\r\n");
  ASSERT_TRUE(p.complete);
  EXPECT_TRUE(p.args.empty());
  EXPECT_FALSE(parse("PING").complete);
}

TEST(Resp, AnInlineLineMayEndWithABareLineFeedAndUseTabs) {
  auto p = parse("ECHO\thi\nPING\r\n");
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.consumed, 8u);
  EXPECT_EQ(p.args, (mini_redis::Command{"ECHO", "hi"}));
  p = parse("\n");
  ASSERT_TRUE(p.complete);
  EXPECT_EQ(p.consumed, 1u);
  EXPECT_TRUE(p.args.empty());
  EXPECT_FALSE(parse("PING\r").complete);  // the line feed has not come yet
}

// Each case as redis-server 7 splits it (checked against it over a socket with ECHO).
TEST(Resp, InlineArgumentsAreQuotedAsRedisServerQuotesThem) {
  const auto args = [](const char* line) { return parse(line).args; };
  using mini_redis::Command;
  EXPECT_EQ(args("ECHO \"a b\"\r\n"), (Command{"ECHO", "a b"}));
  EXPECT_EQ(args("ECHO \"x\\x41\\n\\\"y\"\r\n"), (Command{"ECHO", "xA\n\"y"}));
  EXPECT_EQ(args("ECHO \"\\q\\\\\"\r\n"), (Command{"ECHO", "q\\"}));  // \<any>: itself
  EXPECT_EQ(args("ECHO \"\\x4g\"\r\n"), (Command{"ECHO", "x4g"}));    // not a hex escape
  EXPECT_EQ(args("ECHO 'it\\'s'\r\n"), (Command{"ECHO", "it's"}));
  EXPECT_EQ(args("ECHO 'a\\nb'\r\n"), (Command{"ECHO", "a\\nb"}));  // no escapes but \'
  EXPECT_EQ(args("ECHO \"\" ''\r\n"), (Command{"ECHO", "", ""}));
  EXPECT_EQ(args("ECHO a\"b c\"\r\n"), (Command{"ECHO", "ab c"}));       // opened mid-word
  EXPECT_EQ(args("ECHO \vx a\vb\r\n"), (Command{"ECHO", "x", "a\vb"}));  // \v: only between
  EXPECT_EQ(parse(std::string_view("ECHO a\0b c\r\n", 13)).args, (Command{"ECHO", "a"}));
  EXPECT_EQ(parse("ECHO \"a b\"\r\n").consumed, 12u);
}

TEST(Resp, UnbalancedInlineQuotesThrow) {
  for (const char* line : {"ECHO \"abc\r\n", "ECHO 'abc\r\n", "ECHO \"ab\"c\r\n", "ECHO 'ab'c\r\n",
                           "ECHO a\"b c\"d\r\n", "ECHO \"a\\\"\r\n"}) {
    try {
      (void)parse(line);
      ADD_FAILURE() << "accepted: " << line;
    } catch (const ProtocolError& e) {
      EXPECT_STREQ(e.what(), "unbalanced quotes in request") << line;
    }
  }
}

TEST(Resp, AnInlineLineLongerThanTheLimitThrows) {
  Limits small;
  small.max_inline = 4;
  EXPECT_TRUE(parse("PING\r\n", small).complete);  // 4 bytes: at the limit
  EXPECT_TRUE(parse("PING\n", small).complete);
  EXPECT_THROW((void)parse("PINGS\n", small), ProtocolError);
  EXPECT_THROW((void)parse("PINGS\r\n", small), ProtocolError);
  EXPECT_THROW((void)parse("PINGSS", small), ProtocolError);  // no end within the limit
  EXPECT_FALSE(parse("PINGS", small).complete);               // decided by the next byte
}

TEST(Resp, MalformedInputThrowsProtocolError) {
  for (std::string_view bad :
       {"*x\r\n", "*-1\r\n", "*1\r\n:1\r\n", "*1\r\n$x\r\n", "*1\r\n$-1\r\n",
        "*1\r\n$3\r\nabcde\r\n", "*1\r\n$3\r\nabc\n\n", "*1\r\n$+3\r\nabc\r\n", "*\r\n"}) {
    EXPECT_THROW((void)parse(bad), ProtocolError) << bad;
  }
}

TEST(Resp, LimitsAreCheckedBeforeTheDataArrives) {
  const Limits small{16, 4, 32};
  // Only the headers have come: the lengths alone are refused (nothing is allocated).
  EXPECT_THROW((void)parse("*5\r\n", small), ProtocolError);
  EXPECT_THROW((void)parse("*1\r\n$17\r\n", small), ProtocolError);
  EXPECT_THROW((void)parse("*1\r\n$99999999999999999999999\r\n", small), ProtocolError);
  EXPECT_THROW((void)parse(std::string(40, 'A'), small), ProtocolError);  // an endless line
  EXPECT_THROW((void)parse("*1" + std::string(40, '1'), small), ProtocolError);
  EXPECT_TRUE(parse("*1\r\n$16\r\n0123456789abcdef\r\n", small).complete);
}

TEST(Resp, ReplyWritersProduceRedisBytes) {
  std::string out;
  mini_redis::write_simple(out, "OK");
  mini_redis::write_error(out, "ERR unknown command 'FOO'");
  mini_redis::write_integer(out, -42);
  mini_redis::write_bulk(out, "");
  mini_redis::write_null(out);
  mini_redis::write_array_header(out, 2);
  mini_redis::write_bulk(out, "a");
  mini_redis::write_null_array(out);
  EXPECT_EQ(
      out,
      "+OK\r\n-ERR unknown command 'FOO'\r\n:-42\r\n$0\r\n\r\n$-1\r\n*2\r\n$1\r\na\r\n*-1\r\n");
}

}  // namespace
