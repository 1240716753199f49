// Runs each program of the tutorial (docs/tutorial/steps/) and checks what it does: the
// plain programs by what they print, the servers by talking to them as their clients do,
// so that a step whose code or whose explanation stopped being true fails CI.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "spool/spool.hpp"

#ifdef TUTORIAL_STEP_10
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "spool/tls.hpp"
#include "support/tls_certs.hpp"
#endif

namespace {

using namespace std::chrono_literals;
using spool::Task;
using spool::codec::Framed;
using spool::codec::FramedRead;
using spool::codec::LinesCodec;
using spool::net::SocketAddr;
using spool::net::TcpStream;
using spool::process::Command;
using spool::process::Stdio;

// A bound on every wait, so that a step that stops answering fails with a message instead
// of hanging until ctest's timeout. Not a speed check: nothing here takes more than a second.
constexpr auto kPatience = 60s;

// The next line of `lines` (nullopt at its end); throws if none comes within kPatience.
template <class Lines>
Task<std::optional<std::string>> next_line(Lines& lines, std::string from) {
  auto line = co_await spool::timeout(kPatience, spool::next(lines));
  if (line.elapsed()) throw std::runtime_error(from + " said nothing for a minute");
  co_return std::move(line).value();
}

// Checks that `lines` are `patterns` (ECMAScript regexes matching whole lines), in order.
void expect_lines(const std::string& text, const std::vector<std::string>& patterns) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), patterns.size()) << "the output was:\n" << text;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    EXPECT_TRUE(std::regex_match(lines[i], std::regex(patterns[i])))
        << "line " << i + 1 << " is '" << lines[i] << "', expected /" << patterns[i] << "/";
  }
}

// The words of `text`, separated by spaces.
std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

// Runs `body` to its end on a runtime of its own.
void run(Task<void> body) { spool::Builder::current_thread().build().block_on(std::move(body)); }

// A program run to its end with `args`: its exit status and what it printed.
Task<spool::process::Output> run_to_end(const char* program, std::vector<std::string> args = {}) {
  Command command(program);
  for (std::string& arg : args) command.arg(std::move(arg));
  auto output = co_await spool::timeout(kPatience, command.output());
  if (output.elapsed()) throw std::runtime_error(std::string(program) + " ran for a minute");
  co_return std::move(output).value();
}

Task<void> expect_output(const char* program, std::vector<std::string> patterns) {
  spool::process::Output out = co_await run_to_end(program);
  EXPECT_TRUE(out.status.success()) << program << ": " << out.status.to_string() << "\n"
                                    << out.stderr;
  expect_lines(out.stdout, patterns);
}

// A step's server, running as a child process (killed if the test ends first).
class Server {
 public:
  // Starts `program` with `args` (separated by spaces; listen addresses with port 0, so that
  // free ports are taken), and reads the "<name> on <address>" line it prints for each of
  // `names` (separated by spaces) before anything else.
  static Task<Server> start(const char* program, std::string args,
                            std::string names = "listening") {
    Command command(program);
    for (std::string& arg : words(args)) command.arg(std::move(arg));
    Server server(command.stdout(Stdio::piped()).kill_on_drop(true).spawn());
    for (const std::string& name : words(names)) {
      std::optional<std::string> line = co_await server.line();
      const std::string prefix = name + " on ";
      if (!line || !line->starts_with(prefix)) {
        throw std::runtime_error(std::string(program) + " printed '" + line.value_or("") +
                                 "', not '" + prefix + "<address>'");
      }
      server.addresses_.push_back(SocketAddr::parse(line->substr(prefix.size())));
    }
    co_return server;
  }

  // Where it listens: the first address, or the second...
  const SocketAddr& address(std::size_t i = 0) const { return addresses_.at(i); }

  // The next line it prints (nullopt once it exited).
  Task<std::optional<std::string>> line() { return next_line(out_, "the server's stdout"); }

  // Sends it `signal`.
  void kill(int signal) { child_.kill(signal); }

  // Its exit status, once it exited.
  Task<spool::process::ExitStatus> exit() {
    auto status = co_await spool::timeout(kPatience, child_.wait());
    if (status.elapsed()) throw std::runtime_error("the server did not exit within a minute");
    co_return status.value();
  }

 private:
  explicit Server(spool::process::Child child)
      : child_(std::move(child)), out_(std::move(*child_.stdout), LinesCodec()) {}

  spool::process::Child child_;
  FramedRead<spool::PipeReader, LinesCodec> out_;
  std::vector<SocketAddr> addresses_;
};

// A client of a server that speaks in lines, over `Stream` (TCP, or TLS over TCP).
template <class Stream>
class LineClient {
 public:
  explicit LineClient(Stream stream) : lines_(std::move(stream), LinesCodec()) {}

  Task<void> say(std::string line) { co_await lines_.send(std::move(line)); }

  // The next line (nullopt once the server closed the connection).
  Task<std::optional<std::string>> next() { return next_line(lines_, "the server"); }

  // Reads the next line; throws unless it is `expected`.
  Task<void> hear(std::string expected) {
    std::optional<std::string> line = co_await next();
    if (line != expected) {
      throw std::runtime_error("the server said '" + line.value_or("<the end>") + "' where '" +
                               expected + "' was expected");
    }
  }

  // Reads the next line; throws unless it matches `pattern` (an ECMAScript regex).
  Task<void> hear_match(std::string pattern) {
    std::optional<std::string> line = co_await next();
    if (!line || !std::regex_match(*line, std::regex(pattern))) {
      throw std::runtime_error("the server said '" + line.value_or("<the end>") +
                               "', which does not match /" + pattern + "/");
    }
  }

  // Checks that the server closed the connection.
  Task<void> hear_the_end() {
    std::optional<std::string> line = co_await next();
    if (line) throw std::runtime_error("the server said '" + *line + "' instead of closing");
  }

  // Closes the client's side of a TCP stream (the server reads the end of the stream).
  void close() { lines_.get().shutdown(SHUT_WR); }

  Stream& stream() { return lines_.get(); }

 private:
  Framed<Stream, LinesCodec> lines_;
};

using Client = LineClient<TcpStream>;

Task<Client> connect(const SocketAddr& address) {
  co_return Client(co_await TcpStream::connect(address));
}

TEST(Tutorial, Step01HelloRunsATaskToItsEnd) {
  run(expect_output(TUTORIAL_STEP_01, {
                                          "made the task; nothing has run yet",
                                          "hello, world",
                                          "CountDown was ready at poll 4",
                                          "hello\\(\\) returned 42",
                                      }));
}

TEST(Tutorial, Step02RuntimeJoinsValuesErrorsAndCancellations) {
  run(expect_output(TUTORIAL_STEP_02, {
                                          "the sum of 0 to 999999 is 499999500000",
                                          "failed: spool: task [0-9]+ threw an exception: "
                                          "the disk is full",
                                          "cancelled: yes",
                                      }));
}

TEST(Tutorial, Step03TimeSleepsTicksAndDropsWhatTimedOut) {
  run(expect_output(TUTORIAL_STEP_03, {
                                          "slept 20 ms: yes",
                                          "tick 1",
                                          "tick 2",
                                          "tick 3",
                                          "quick: found it",
                                          "slow_lookup's frame: destroyed",
                                          "slow: timed out",
                                      }));
}

Task<void> talk_to_echo() {
  Server server = co_await Server::start(TUTORIAL_STEP_04, "127.0.0.1:0");
  // a stays connected while b is served: each connection has a task of its own.
  Client a = co_await connect(server.address());
  Client b = co_await connect(server.address());
  co_await a.say("from a");
  co_await b.say("from b");
  co_await b.hear("from b");
  co_await a.hear("from a");
  b.close();
  co_await b.hear_the_end();
  co_await a.say("still here");
  co_await a.hear("still here");
}

TEST(Tutorial, Step04EchoServesEachConnectionInItsOwnTask) { run(talk_to_echo()); }

Task<void> talk_to_lines() {
  Server server = co_await Server::start(TUTORIAL_STEP_05, "127.0.0.1:0");
  Client c = co_await connect(server.address());
  // Two lines in one write, and one cut across two writes: framing finds each line.
  co_await c.stream().write_all(std::string_view("upper hello\nreverse abc\nupp"));
  co_await c.hear("HELLO");
  co_await c.hear("cba");
  co_await c.say("er again");
  co_await c.hear("AGAIN");
  co_await c.say("upper " + std::string(2000, 'x'));
  co_await c.hear("error: line too long");
  co_await c.say("shout it");
  co_await c.hear("error: unknown command 'shout'");
  c.close();
  co_await c.hear_the_end();
}

TEST(Tutorial, Step05LinesAnswersEachLineAndSkipsOverlongOnes) { run(talk_to_lines()); }

// Joins a chat server as `name` through `c`, and waits until it joined (from step 8 on, past
// the lines said before, which it replays first).
template <class Stream>
Task<LineClient<Stream>> join_chat(LineClient<Stream> c, std::string name) {
  co_await c.hear("what is your name?");
  co_await c.say(name);
  for (;;) {
    std::optional<std::string> line = co_await c.next();
    if (line == "* " + name + " joined") co_return c;
    if (!line || !line->starts_with("(earlier) ")) {
      throw std::runtime_error(name + " was told '" + line.value_or("<the end>") +
                               "' before it joined");
    }
  }
}

// The same over TCP.
Task<Client> join_chat(const Server& server, std::string name) {
  co_return co_await join_chat(co_await connect(server.address()), std::move(name));
}

// Two clients chat with the chat server `program` started with `args`.
Task<void> talk_to_chat(const char* program, std::string args) {
  Server server = co_await Server::start(program, args);
  Client alice = co_await join_chat(server, "alice");
  Client bob = co_await join_chat(server, "bob");
  co_await alice.hear("* bob joined");
  co_await bob.say("hi");
  co_await bob.hear("bob: hi");
  co_await alice.hear("bob: hi");
  alice.close();
  co_await alice.hear_the_end();
  co_await bob.hear("* alice left");
}

TEST(Tutorial, Step06ChatBroadcastsJoinsLinesAndLeaves) {
  run(talk_to_chat(TUTORIAL_STEP_06, "127.0.0.1:0"));
}

TEST(Tutorial, Step07ChatsAsStep06) { run(talk_to_chat(TUTORIAL_STEP_07, "127.0.0.1:0")); }

Task<void> stay_silent_in_chat() {
  Server server = co_await Server::start(TUTORIAL_STEP_07, "127.0.0.1:0 1");  // idle: 1 s
  // One that never gives its name is dropped...
  Client nameless = co_await connect(server.address());
  co_await nameless.hear("what is your name?");
  co_await nameless.hear_the_end();
  // ... and so is one that says nothing once it joined.
  Client carol = co_await join_chat(server, "carol");
  co_await carol.hear("* you were silent for too long, bye");
  co_await carol.hear_the_end();
}

TEST(Tutorial, Step07IdleDropsSilentClients) { run(stay_silent_in_chat()); }

// A bad idle timeout is refused with a message that names it, before anything listens.
Task<void> give_a_bad_idle_timeout() {
  std::vector<std::string> args{"127.0.0.1:0", "soon"};  // not braced in the co_await: g++ 12
  spool::process::Output out = co_await run_to_end(TUTORIAL_STEP_07, std::move(args));
  EXPECT_EQ(out.status.code(), std::optional<int>(1));
  EXPECT_EQ(out.stdout, "");
  EXPECT_EQ(out.stderr,
            "chat: idle-seconds must be a whole number above 0, not 'soon'\n"
            "usage: chat [address:port] [idle-seconds]\n");
}

TEST(Tutorial, Step07RefusesABadIdleTimeout) { run(give_a_bad_idle_timeout()); }

// The history a newcomer gets (from the "history" level) and the admin port (on "admin").
Task<void> run_the_room_with_an_admin() {
  Server server =
      co_await Server::start(TUTORIAL_STEP_08, "127.0.0.1:0 127.0.0.1:0", "listening admin");
  Client alice = co_await join_chat(server, "alice");
  co_await alice.say("anyone here?");
  co_await alice.hear("alice: anyone here?");
  Client bob = co_await connect(server.address());
  co_await bob.hear("what is your name?");
  co_await bob.say("bob");
  co_await bob.hear("(earlier) * alice joined");
  co_await bob.hear("(earlier) alice: anyone here?");
  co_await bob.hear("* bob joined");
  co_await alice.hear("* bob joined");

  Client admin = co_await connect(server.address(1));
  co_await admin.say("users");
  co_await admin.hear("2 in the room");
  co_await admin.say("stats");
  co_await admin.hear_match("admin: [0-9]+ polls; chat: [0-9]+ polls; history: [0-9]+ polls; ");
  co_await admin.say("say closing soon");
  co_await alice.hear("* admin: closing soon");
  co_await bob.hear("* admin: closing soon");
  co_await admin.say("help");
  co_await admin.hear("commands: users, stats, say TEXT");
}

TEST(Tutorial, Step08ChatsAsStep06) {
  run(talk_to_chat(TUTORIAL_STEP_08, "127.0.0.1:0 127.0.0.1:0"));
}

TEST(Tutorial, Step08ReplaysHistoryAndServesTheAdminPort) { run(run_the_room_with_an_admin()); }

TEST(Tutorial, Step09ChatsAsStep06) { run(talk_to_chat(TUTORIAL_STEP_09, "127.0.0.1:0")); }

// Checks that the server prints `lines` (each ended by "\n") and then exits with status 0.
Task<void> expect_exit(Server& server, std::string lines) {
  std::istringstream in(lines);
  for (std::string expected; std::getline(in, expected);) {
    std::optional<std::string> line = co_await server.line();
    EXPECT_EQ(line.value_or("<the end>"), expected);
  }
  EXPECT_EQ(co_await server.line(), std::nullopt);
  spool::process::ExitStatus status = co_await server.exit();
  EXPECT_TRUE(status.success()) << status.to_string();
}

// alice and bob, who joined `server` in that order, chat; then SIGTERM: each is told and
// disconnected, and the server exits 0.
template <class Stream>
Task<void> chat_until_sigterm(Server& server, LineClient<Stream>& alice, LineClient<Stream>& bob) {
  co_await alice.hear("* bob joined");
  co_await bob.say("hi");
  co_await alice.hear("bob: hi");
  co_await bob.hear("bob: hi");
  server.kill(SIGTERM);
  co_await alice.hear("* the server is shutting down, bye");
  co_await bob.hear("* the server is shutting down, bye");
  co_await alice.hear_the_end();
  co_await bob.hear_the_end();
  co_await expect_exit(server, "shutting down: 2 connections open\nall connections closed\nbye\n");
}

Task<void> terminate_the_chat() {
  Server server = co_await Server::start(TUTORIAL_STEP_09, "127.0.0.1:0");
  Client alice = co_await join_chat(server, "alice");
  Client bob = co_await join_chat(server, "bob");
  co_await chat_until_sigterm(server, alice, bob);
}

// Ctrl-C (SIGINT) with nobody connected.
Task<void> interrupt_the_chat() {
  Server server = co_await Server::start(TUTORIAL_STEP_09, "127.0.0.1:0");
  server.kill(SIGINT);
  co_await expect_exit(server, "shutting down: 0 connections open\nall connections closed\nbye\n");
}

TEST(Tutorial, Step09TellsEachClientAndExitsOnSigterm) { run(terminate_the_chat()); }

TEST(Tutorial, Step09ExitsOnSigint) { run(interrupt_the_chat()); }

#ifdef TUTORIAL_STEP_10
using TlsClient = LineClient<spool::tls::TlsStream<TcpStream>>;

// The test PKI's certificate for localhost and its key, as the PEM files step 10 reads, in a
// directory of their own that goes with this object.
class PemFiles {
 public:
  PemFiles() {
    std::string dir = (std::filesystem::temp_directory_path() / "spool-tutorial-XXXXXX").string();
    if (::mkdtemp(dir.data()) == nullptr) throw std::system_error(errno, std::generic_category());
    dir_ = dir;
    std::ofstream(cert()) << spool_tls_test::pki().server.cert;
    std::ofstream(key()) << spool_tls_test::pki().server.key;
  }
  ~PemFiles() { std::filesystem::remove_all(dir_); }
  PemFiles(const PemFiles&) = delete;
  PemFiles& operator=(const PemFiles&) = delete;

  std::string cert() const { return (dir_ / "cert.pem").string(); }
  std::string key() const { return (dir_ / "key.pem").string(); }

 private:
  std::filesystem::path dir_;
};

// A TLS client that trusts the test CA only, and checks that the server is localhost.
Task<TlsClient> connect_tls(const SocketAddr& address) {
  spool::tls::TlsContextBuilder trust(spool::tls::Role::kClient);
  trust.ca_pem(spool_tls_test::pki().ca.cert);
  spool::tls::TlsConnector connector(trust.build());
  TcpStream tcp = co_await TcpStream::connect(address);
  co_return TlsClient(co_await connector.connect("localhost", std::move(tcp)));
}

// Reads `c` to its end, whatever it says (a TLS alert, then the end, or a reset).
Task<void> drain(Client& c) {
  try {
    while (co_await c.next()) {
    }
  } catch (const std::system_error&) {
  }
}

// Chat over TLS; SIGTERM ends every connection with the goodbye and close_notify.
Task<void> chat_over_tls() {
  PemFiles pem;
  Server server =
      co_await Server::start(TUTORIAL_STEP_10, "127.0.0.1:0 " + pem.cert() + " " + pem.key());
  TlsClient alice = co_await join_chat(co_await connect_tls(server.address()), "alice");
  TlsClient bob = co_await join_chat(co_await connect_tls(server.address()), "bob");
  co_await chat_until_sigterm(server, alice, bob);
}

// A client that does not speak TLS is turned away, and the server goes on.
Task<void> knock_without_tls() {
  PemFiles pem;
  Server server =
      co_await Server::start(TUTORIAL_STEP_10, "127.0.0.1:0 " + pem.cert() + " " + pem.key());
  Client plain = co_await connect(server.address());
  co_await plain.say("hello?");
  co_await drain(plain);
  TlsClient alice = co_await join_chat(co_await connect_tls(server.address()), "alice");
}

TEST(Tutorial, Step10ChatsOverTlsAndShutsDownCleanly) { run(chat_over_tls()); }

TEST(Tutorial, Step10TurnsAwayAClientWithoutTls) { run(knock_without_tls()); }
#endif

}  // namespace
