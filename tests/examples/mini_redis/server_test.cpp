// mini-redis's server over real loopback sockets, in-process: commands and their replies,
// malformed input (a RESP error, then that connection alone closes), the query buffer
// limits (one connection's, all connections'), pub/sub, the idle timeout, the connection
// limit, the replies a pipeline makes the server hold, and the graceful shutdown.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>
#include <vector>

#include "client.hpp"
#include "server.hpp"
#include "spool/spool.hpp"

namespace {

using mini_redis::Client;
using mini_redis::Reply;
using namespace std::chrono_literals;

mini_redis::ServerConfig local_config() {
  mini_redis::ServerConfig c;
  c.port = 0;  // any free port
  return c;
}

// Runs `body(server)` against a server that runs meanwhile, then shuts the server down and
// waits for it (its run() returns only once every connection has closed), also when the
// body throws (the server must not go while its tasks still use it).
template <class Body>
void with_server(const mini_redis::ServerConfig& config, Body body) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  rt.block_on([](const mini_redis::ServerConfig& c, Body b) -> spool::Task<void> {
    mini_redis::Server server(c);
    auto running = spool::spawn(server.run());
    std::exception_ptr failure;
    try {
      co_await b(server);
    } catch (...) {
      failure = std::current_exception();
    }
    server.shutdown();
    co_await running;
    if (failure) std::rethrow_exception(failure);
  }(config, std::move(body)));
}

// "SET k v" -> {"SET", "k", "v"}. (The tests pass commands as one string: g++ 12 cannot
// keep a braced list of string literals alive across a co_await.)
std::vector<std::string> words(const char* command) {
  std::vector<std::string> w;
  std::string word;
  for (const char* p = command;; ++p) {
    if (*p == ' ' || *p == '\0') {
      if (!word.empty()) w.push_back(std::move(word));
      word.clear();
      if (*p == '\0') return w;
    } else {
      word += *p;
    }
  }
}

// Sends `command` (words separated by spaces) and reads its reply.
spool::Task<Reply> ask(Client& c, const char* command) { return c.command(words(command)); }

std::string print(const Reply& r) {
  std::string out;
  mini_redis::print_reply(out, r);
  return out;
}

// Sends `bytes` on a new raw connection and reads until the server closes it.
spool::Task<std::string> exchange_raw(spool::net::SocketAddr addr, std::string bytes) {
  auto stream = co_await spool::net::TcpStream::connect(addr);
  co_await stream.write_all(bytes);
  std::string got;
  char buf[4096];
  for (;;) {
    const std::size_t n = co_await stream.read(buf);
    if (n == 0) co_return got;
    got.append(buf, n);
  }
}

TEST(MiniRedisServer, AnswersTheCommandsOfItsList) {
  with_server(local_config(), [](mini_redis::Server& server) -> spool::Task<void> {
    auto c = co_await Client::connect(server.local_addr());
    EXPECT_EQ(print(co_await ask(c, "PING")), "PONG\n");
    EXPECT_EQ(print(co_await ask(c, "SET k v EX 100")), "OK\n");
    EXPECT_EQ(print(co_await ask(c, "GET k")), "v\n");
    EXPECT_EQ(print(co_await ask(c, "TTL k")), "100\n");
    EXPECT_EQ(print(co_await ask(c, "SET k w NX")), "\n");  // nil: k exists
    EXPECT_EQ(print(co_await ask(c, "INCR n")), "1\n");
    EXPECT_EQ(print(co_await ask(c, "MSET a 1 b 2")), "OK\n");
    EXPECT_EQ(print(co_await ask(c, "EXISTS a b nope")), "2\n");
    EXPECT_EQ(print(co_await ask(c, "DEL a b")), "2\n");
    EXPECT_EQ(print(co_await ask(c, "RPUSH l x y z")), "3\n");
    EXPECT_EQ(print(co_await ask(c, "LRANGE l 0 -1")), "x\ny\nz\n");
    EXPECT_EQ(print(co_await ask(c, "LPOP l")), "x\n");
    EXPECT_EQ(print(co_await ask(c, "ZADD z 2 b 1 a")), "2\n");
    EXPECT_EQ(print(co_await ask(c, "ZPOPMIN z")), "a\n1\n");
    EXPECT_EQ(print(co_await ask(c, "HSET h f v")), "1\n");
    EXPECT_EQ(print(co_await ask(c, "GET h")),
              "WRONGTYPE Operation against a key holding the wrong kind of value\n");
    const Reply unknown = co_await ask(c, "NOSUCH x");
    EXPECT_EQ(unknown.kind, Reply::Kind::kError);
    EXPECT_EQ(unknown.text, "ERR unknown command 'NOSUCH', with args beginning with: 'x' ");
    EXPECT_EQ(print(co_await ask(c, "ECHO still-open")), "still-open\n");
  });
}

TEST(MiniRedisServer, AKeyExpiresAfterItsTime) {
  with_server(local_config(), [](mini_redis::Server& server) -> spool::Task<void> {
    auto c = co_await Client::connect(server.local_addr());
    EXPECT_EQ(print(co_await ask(c, "SET k v PX 1")), "OK\n");
    co_await spool::sleep(5ms);  // past the expiry time: the test waits for it, not a race
    EXPECT_EQ(print(co_await ask(c, "GET k")), "\n");
    EXPECT_EQ(print(co_await ask(c, "TTL k")), "-2\n");
  });
}

// Each case: what a client sends, and the error the server answers before closing.
struct Malformed {
  std::string input;
  std::string reply;
};

TEST(MiniRedisServer, MalformedInputGetsAnErrorAndClosesThatConnectionOnly) {
  auto config = local_config();
  config.limits.max_bulk = 16;
  config.limits.max_args = 4;
  config.limits.max_inline = 64;
  const std::vector<Malformed> cases = {
      {"*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
      {"*-5\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
      {"*5\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},  // over max_args
      {"*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
      {"*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
      {"*1\r\n$17\r\n", "-ERR Protocol error: invalid bulk length\r\n"},  // over max_bulk
      {"*1\r\n$4\r\nPINGxx", "-ERR Protocol error: bulk string not terminated by CRLF\r\n"},
      {std::string(100, 'a'), "-ERR Protocol error: line too long\r\n"},  // over max_inline
      // A good command before the bad one is answered first.
      {"PING\r\n*x\r\n", "+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n"},
  };
  with_server(config, [&cases](mini_redis::Server& server) -> spool::Task<void> {
    // A well-behaved connection, open through all of it, sees only its own replies.
    auto good = co_await Client::connect(server.local_addr());
    EXPECT_EQ(print(co_await ask(good, "SET mine 1")), "OK\n");
    for (const Malformed& m : cases) {
      EXPECT_EQ(co_await exchange_raw(server.local_addr(), m.input), m.reply) << m.input;
      EXPECT_EQ(print(co_await ask(good, "GET mine")), "1\n") << m.input;
    }
  });
}

TEST(MiniRedisServer, AConnectionBufferingMoreThanMaxQueryIsClosed) {
  auto config = local_config();
  config.max_query = 32 * 1024;
  with_server(config, [](mini_redis::Server& server) -> spool::Task<void> {
    // A bulk string of 40,000 bytes (under max_bulk) of which exactly max_query bytes come:
    // the server reads them all, cannot buffer more, says so and closes.
    std::string input = "*1\r\n$40000\r\n";
    input.resize(32 * 1024, 'x');
    EXPECT_EQ(co_await exchange_raw(server.local_addr(), input),
              "-ERR query buffer limit reached (--max-query)\r\n");
  });
}

// Reads what `s` receives until the server closes it: "reset" when the server closed it with
// bytes of ours unread (the kernel then resets it, and what the server wrote may be lost).
spool::Task<std::string> read_to_end(spool::net::TcpStream& s) {
  std::string got;
  char buf[4096];
  try {
    for (;;) {
      const std::size_t n = co_await s.read(buf);
      if (n == 0) co_return got;
      got.append(buf, n);
    }
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::connection_reset) << e.what();
  }
  co_return "reset";
}

// Two connections each send most of an ECHO that needs 44 KiB of buffer past the usual
// 16 KiB; max_query_total has room for one: whichever the server reads second is refused,
// the other answered once it sends the rest. After that, the budget is free again.
TEST(MiniRedisServer, LargeCommandsTogetherStayWithinMaxQueryTotal) {
  auto config = local_config();
  config.max_query_total = 64 * 1024;
  with_server(config, [](mini_redis::Server& server) -> spool::Task<void> {
    const std::string value(60000, 'x');
    const std::string echo = "*2\r\n$4\r\nECHO\r\n$60000\r\n" + value + "\r\n";
    const std::string_view most = std::string_view(echo).substr(0, 40000);
    const std::string reply = "$60000\r\n" + value + "\r\n";
    auto a = co_await spool::net::TcpStream::connect(server.local_addr());
    auto b = co_await spool::net::TcpStream::connect(server.local_addr());
    co_await a.write_all(most);
    co_await b.write_all(most);
    // Neither command can end, so the server reads both parts and must refuse one. (A right
    // server does so at once; the bound only keeps a wrong one from hanging the test.)
    auto closed = co_await spool::timeout(60s, spool::when_any(read_to_end(a), read_to_end(b)));
    if (closed.elapsed()) {
      ADD_FAILURE() << "both large commands were buffered together past max_query_total";
      co_return;
    }
    const auto& first_closed = closed.value();
    const std::string refusal =
        std::visit([](const std::string& got) { return got; }, first_closed);
    if (refusal != "reset") {
      EXPECT_EQ(refusal,
                "-ERR query buffers of all connections at their limit (--max-query-total)\r\n");
    }
    auto& answered = first_closed.index() == 0 ? b : a;
    co_await answered.write_all(std::string_view(echo).substr(most.size()));
    std::string got(reply.size(), '\0');
    co_await answered.read_exact(got);
    EXPECT_TRUE(got == reply);
    // Its PONG comes after its buffer went back to 16 KiB: then a third connection's large
    // command has the whole budget.
    co_await answered.write_all(std::string_view("PING\r\n"));
    std::string pong(7, '\0');
    co_await answered.read_exact(pong);
    EXPECT_EQ(pong, "+PONG\r\n");
    auto c = co_await spool::net::TcpStream::connect(server.local_addr());
    co_await c.write_all(echo);
    co_await c.read_exact(got);
    EXPECT_TRUE(got == reply);
  });
}

TEST(MiniRedisServer, PublishReachesEverySubscriberOfTheChannel) {
  with_server(local_config(), [](mini_redis::Server& server) -> spool::Task<void> {
    auto sub = co_await Client::connect(server.local_addr());
    auto pub = co_await Client::connect(server.local_addr());
    EXPECT_EQ(print(co_await ask(sub, "SUBSCRIBE news")), "subscribe\nnews\n1\n");
    EXPECT_EQ(print(co_await ask(pub, "PUBLISH news hello")), "1\n");
    EXPECT_EQ(print(co_await ask(pub, "PUBLISH other x")), "0\n");
    // Published before the PING, the message comes before the PING's reply (as in redis).
    EXPECT_EQ(print(co_await ask(sub, "PING")), "message\nnews\nhello\n");
    EXPECT_EQ(print(co_await sub.read_reply()), "pong\n\n");  // PING's subscriber form
    // In subscriber mode only the subscription commands, PING and QUIT run; an unknown
    // command is still unknown, a wrong number of arguments still wrong.
    const Reply refused = co_await ask(sub, "GET k");
    EXPECT_EQ(refused.kind, Reply::Kind::kError);
    EXPECT_EQ(refused.text.rfind("ERR Can't execute 'get'", 0), 0u) << refused.text;
    // A wrong number of arguments is reported first, as redis-server 7 does.
    EXPECT_EQ((co_await ask(sub, "GET")).text, "ERR wrong number of arguments for 'get' command");
    EXPECT_EQ((co_await ask(sub, "PUBLISH news")).text,
              "ERR wrong number of arguments for 'publish' command");
    const Reply unknown = co_await ask(sub, "NOSUCH");
    EXPECT_EQ(unknown.text, "ERR unknown command 'NOSUCH', with args beginning with: ");
    EXPECT_EQ(print(co_await ask(sub, "UNSUBSCRIBE")), "unsubscribe\nnews\n0\n");
    EXPECT_EQ(print(co_await ask(sub, "GET k")), "\n");  // out of subscriber mode
    EXPECT_EQ(print(co_await ask(pub, "PUBLISH news again")), "0\n");
  });
}

TEST(MiniRedisServer, ASubscriberMoreThan32MBBehindIsDisconnectedAtOnce) {
  auto config = local_config();
  config.idle_timeout = std::chrono::seconds(0);  // never: only the overflow may close it
  with_server(config, [](mini_redis::Server& server) -> spool::Task<void> {
    // A raw subscriber, which stops reading once subscribed.
    auto sub = co_await spool::net::TcpStream::connect(server.local_addr());
    co_await sub.write_all(std::string_view("*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nnews\r\n"));
    const std::string_view confirmation = "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n";
    std::string got(confirmation.size(), '\0');
    co_await sub.read_exact(got);
    EXPECT_EQ(got, confirmation);
    // Messages of 1 MB, far fewer than the mailbox's 1,024: past 32 MB (and what the
    // socket buffers take) the subscriber is disconnected while its connection waits for it
    // to read, and leaves the channel; PUBLISH counts it until then.
    constexpr int kMostMessages = 200;
    auto pub = co_await Client::connect(server.local_addr());
    const std::vector<std::string> publish{"PUBLISH", "news", std::string(1 << 20, 'x')};
    int counted = 0;
    while (counted < kMostMessages && print(co_await pub.command(publish)) == "1\n") ++counted;
    EXPECT_GE(counted, 32);
    if (counted == kMostMessages) {
      ADD_FAILURE() << "the subscriber was never disconnected";
      co_return;  // (its stream would never end)
    }
    // What the socket buffers held, then the end of the stream.
    std::vector<char> buf(1 << 16);
    while (co_await sub.read(std::span(buf)) != 0) {
    }
  });
}

TEST(MiniRedisServer, AnIdleConnectionIsClosed) {
  auto config = local_config();
  config.idle_timeout = 200ms;
  with_server(config, [](mini_redis::Server& server) -> spool::Task<void> {
    // The server answers, then closes the silent connection: exchange_raw returns at EOF.
    EXPECT_EQ(co_await exchange_raw(server.local_addr(), "PING\r\n"), "+PONG\r\n");
  });
}

TEST(MiniRedisServer, InlineCommandsEndedByABareLineFeedAreAnswered) {
  with_server(local_config(), [](mini_redis::Server& server) -> spool::Task<void> {
    // What `printf 'PING\nECHO\thi\nQUIT\n' | nc` sends; QUIT closes, so the reply is whole.
    EXPECT_EQ(co_await exchange_raw(server.local_addr(), "PING\nECHO\thi\nQUIT\n"),
              "+PONG\r\n$2\r\nhi\r\n+OK\r\n");
  });
}

TEST(MiniRedisServer, AnErrorQuotingTheClientNeverEndsItsLineEarly) {
  with_server(local_config(), [](mini_redis::Server& server) -> spool::Task<void> {
    // CONFIG's subcommand "x\r\n+OK" is quoted in the error: its CR LF must not end the
    // line there, which would forge a "+OK" reply.
    EXPECT_EQ(co_await exchange_raw(server.local_addr(),
                                    "*2\r\n$6\r\nCONFIG\r\n$6\r\nx\r\n+OK\r\nQUIT\r\n"),
              "-ERR unknown subcommand 'x  +OK'. Try CONFIG HELP.\r\n+OK\r\n");
  });
}

TEST(MiniRedisServer, QuitAnswersOkAndCloses) {
  with_server(local_config(), [](mini_redis::Server& server) -> spool::Task<void> {
    EXPECT_EQ(co_await exchange_raw(server.local_addr(), "QUIT\r\nPING\r\n"), "+OK\r\n");
  });
}

TEST(MiniRedisServer, ConnectionsBeyondTheLimitWaitForAFreeSlot) {
  auto config = local_config();
  config.max_connections = 1;
  with_server(config, [](mini_redis::Server& server) -> spool::Task<void> {
    auto first = std::make_unique<Client>(co_await Client::connect(server.local_addr()));
    EXPECT_EQ(print(co_await ask(*first, "PING")), "PONG\n");
    auto second = co_await Client::connect(server.local_addr());  // in the backlog
    co_await second.send(words("PING"));
    // Not served while the first holds the only slot (a wrong server answers well within
    // this; a right one never does, so the check cannot fail spuriously).
    auto early = co_await spool::timeout(100ms, second.read_reply());
    EXPECT_TRUE(early.elapsed()) << "the second connection was served beyond the limit";
    first.reset();  // frees the slot
    EXPECT_EQ(print(co_await second.read_reply()), "PONG\n");
  });
}

TEST(MiniRedisServer, ShutdownDoesNotWaitForAClientThatStopsReading) {
  spool::Runtime rt = spool::Builder::multi_thread().worker_threads(2).build();
  rt.block_on([]() -> spool::Task<void> {
    mini_redis::Server server(local_config());
    auto running = spool::spawn(server.run());
    auto stream = co_await spool::net::TcpStream::connect(server.local_addr());
    const std::string big(1 << 20, 'x');
    const std::string set =
        "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$" + std::to_string(big.size()) + "\r\n" + big + "\r\n";
    co_await stream.write_all(set);
    char ok[5];
    co_await stream.read_exact(ok);
    EXPECT_EQ(std::string(ok, 5), "+OK\r\n");
    std::string gets;
    for (int i = 0; i < 64; ++i) gets += "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n";
    co_await stream.write_all(gets);
    // 64 MiB of replies, never read: the server's write waits on a full send buffer, with
    // this stream still open. run() returns only if that write gives up at the shutdown.
    server.shutdown();
    co_await running;
  }());
}

TEST(MiniRedisServer, ShutdownLetsAConnectionFinishAndThenClosesIt) {
  with_server(local_config(), [](mini_redis::Server& server) -> spool::Task<void> {
    auto stream = co_await spool::net::TcpStream::connect(server.local_addr());
    co_await stream.write_all(std::string("SET k v\r\n"));
    char buf[64];
    const std::size_t n = co_await stream.read(buf);
    EXPECT_EQ(std::string(buf, n), "+OK\r\n");
    server.shutdown();
    EXPECT_EQ(co_await stream.read(buf), 0u);  // closed by the server, not by us
  });
}

// The peak resident memory of this process so far, in KiB.
long peak_rss_kib() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// A client that pipelines many GETs of a large value gets every reply, in order, and the
// server holds only a few of them at a time: it writes what it has before it runs the rest
// of the pipeline. (Held at once, the replies would take 128 MiB.)
TEST(MiniRedisServer, APipelinesRepliesAreWrittenBeforeTheRestOfItRuns) {
  with_server(local_config(), [](mini_redis::Server& server) -> spool::Task<void> {
    auto stream = co_await spool::net::TcpStream::connect(server.local_addr());
    const std::string value(1 << 20, 'v');
    co_await stream.write_all("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$" + std::to_string(value.size()) +
                              "\r\n" + value + "\r\n");
    std::string ok(5, '\0');
    co_await stream.read_exact(ok);
    EXPECT_EQ(ok, "+OK\r\n");
    constexpr int kGets = 128;
    std::string pipeline;
    for (int i = 0; i < kGets; ++i) pipeline += "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n";
    pipeline += "PING\r\n";
    const long before = peak_rss_kib();
    co_await stream.write_all(pipeline);
    const std::string reply = "$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
    std::string got(reply.size(), '\0');
    for (int i = 0; i < kGets; ++i) {
      co_await stream.read_exact(got);
      if (got != reply) {
        ADD_FAILURE() << "reply " << i << " differs";
        co_return;
      }
    }
    std::string pong(7, '\0');
    co_await stream.read_exact(pong);
    EXPECT_EQ(pong, "+PONG\r\n");
    const long grew = peak_rss_kib() - before;
    std::printf("[ info     ] the peak resident memory grew by %ld KiB (limit 65536)\n", grew);
    EXPECT_LT(grew, 64 * 1024) << "the server held the replies at once";
  });
}

}  // namespace
