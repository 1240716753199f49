// Step 7: the chat server drops clients that stay silent too long.
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include "spool/spool.hpp"

using spool::codec::Framed;
using spool::codec::LinesCodec;
using spool::net::SocketAddr;
using spool::net::TcpListener;
using spool::net::TcpStream;

using Lines = Framed<TcpStream, LinesCodec>;
// What the connections share: a broadcast channel. Each connection sends through its own
// copy of the Sender, and reads everyone's messages through its own Receiver.
using Hub = spool::broadcast::Sender<std::string>;

// Until the client leaves, or stays silent for `idle`: its lines go to everyone,
// everyone's messages go to it.
spool::Task<void> converse(Lines& client, Hub& hub, const std::string& name,
                           std::chrono::seconds idle) {
  spool::broadcast::Receiver<std::string> inbox = hub.subscribe();
  hub.send("* " + name + " joined");
  spool::Instant deadline = spool::time::now() + idle;  // moved on by each line it sends
  for (;;) {
    // The select of step 6, given up at the deadline: timeout_at drops it, and with it
    // both futures inside, which lose nothing.
    auto event =
        co_await spool::timeout_at(deadline, spool::select(spool::next(client), inbox.recv()));
    if (event.elapsed()) {
      co_await client.send("* you were silent for too long, bye");
      co_return;
    }
    if (event.value().index() == 0) {
      std::optional<std::string>& line = std::get<0>(event.value());
      if (!line) co_return;
      hub.send(name + ": " + *line);
      deadline = spool::time::now() + idle;
    } else {
      spool::broadcast::RecvResult<std::string>& message = std::get<1>(event.value());
      if (message.lagged()) {
        co_await client.send("* (missed " + std::to_string(message.missed()) + " messages)");
      } else {
        co_await client.send(*message);
      }
    }
  }
}

spool::Task<void> chat(TcpStream stream, Hub hub, std::chrono::seconds idle) {
  Lines client(std::move(stream), LinesCodec(1024));
  std::string name;
  try {
    co_await client.send("what is your name?");
    auto answer = co_await spool::timeout(idle, spool::next(client));
    if (answer.elapsed() || !answer.value()) co_return;  // silent, or gone
    name = std::move(*answer.value());
    co_await converse(client, hub, name, idle);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.empty() ? "a client" : name.c_str(), e.what());
  }
  if (!name.empty()) hub.send("* " + name + " left");
}

spool::Task<void> serve(SocketAddr address, std::chrono::seconds idle) {
  TcpListener listener = TcpListener::bind(address);
  std::printf("listening on %s\n", listener.local_addr().to_string().c_str());
  std::fflush(stdout);
  // The last 64 messages are kept for receivers that are behind.
  Hub hub = spool::broadcast::channel<std::string>(64).first;
  for (;;) {
    auto [stream, peer] = co_await listener.accept();
    spool::spawn(chat(std::move(stream), hub, idle)).detach();
  }
}

// The idle timeout from the command line: a whole number of seconds, or an error that says so.
std::chrono::seconds idle_seconds(const char* text) {
  std::size_t end = 0;
  long seconds = -1;
  try {
    seconds = std::stol(text, &end);
  } catch (const std::exception&) {
  }
  if (seconds <= 0 || text[end] != '\0') {
    throw std::invalid_argument(std::string("idle-seconds must be a whole number above 0, not '") +
                                text + "'");
  }
  return std::chrono::seconds(seconds);
}

int main(int argc, char** argv) {
  try {
    SocketAddr address = SocketAddr::parse(argc > 1 ? argv[1] : "127.0.0.1:6142");
    std::chrono::seconds idle = argc > 2 ? idle_seconds(argv[2]) : std::chrono::seconds(300);
    spool::Runtime rt = spool::Builder::multi_thread().build();
    rt.block_on(serve(address, idle));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chat: %s\nusage: chat [address:port] [idle-seconds]\n", e.what());
    return 1;
  }
}
