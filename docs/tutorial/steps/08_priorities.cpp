// Step 8: priorities — an admin port on the highest level, history replay on the lowest.
#include <chrono>
#include <cstdio>
#include <deque>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "spool/spool.hpp"

using spool::codec::Framed;
using spool::codec::LinesCodec;
using spool::net::SocketAddr;
using spool::net::TcpListener;
using spool::net::TcpStream;

using Lines = Framed<TcpStream, LinesCodec>;

// What the connections share: the broadcast channel, and the last messages said, for
// newcomers. Posting holds the lock of `recent`, so both see the messages in one order.
struct Room {
  spool::broadcast::Sender<std::string> hub = spool::broadcast::channel<std::string>(64).first;
  spool::Mutex<std::deque<std::string>> recent;
};

spool::Task<void> post(Room& room, std::string message) {
  auto recent = co_await room.recent.lock();
  recent->push_back(message);
  if (recent->size() > 20) recent->pop_front();
  room.hub.send(std::move(message));
}

// A newcomer's way in: what was said before, and an inbox for all that comes after.
struct Entry {
  std::vector<std::string> earlier;
  spool::broadcast::Receiver<std::string> inbox;
};

// Under the lock: no message is missed or seen twice. Short, and on the chat level: every
// post waits for this lock.
spool::Task<Entry> enter(Room& room) {
  auto recent = co_await room.recent.lock();
  co_return Entry{{recent->begin(), recent->end()}, room.hub.subscribe()};
}

// Bulk work (imagine a day of history read from disk): it runs on the lowest level, so a
// crowd of newcomers cannot slow down the live chat. It holds no lock the chat needs.
spool::Task<std::vector<std::string>> replay(std::vector<std::string> earlier) {
  for (std::string& line : earlier) line.insert(0, "(earlier) ");
  co_return earlier;
}

spool::Task<void> converse(Lines& client, Room& room, const std::string& name,
                           std::chrono::seconds idle) {
  spool::Handle rt = spool::Handle::current();
  Entry entry = co_await enter(room);
  auto earlier = co_await rt.spawn_on(rt.channel("history"), replay(std::move(entry.earlier)));
  for (std::string& line : earlier) client.feed(std::move(line));  // no I/O yet
  co_await client.flush();  // all of them in as few writes as the socket takes
  co_await post(room, "* " + name + " joined");
  spool::Instant deadline = spool::time::now() + idle;
  for (;;) {
    auto event = co_await spool::timeout_at(deadline,
                                            spool::select(spool::next(client), entry.inbox.recv()));
    if (event.elapsed()) {
      co_await client.send("* you were silent for too long, bye");
      co_return;
    }
    if (event.value().index() == 0) {
      std::optional<std::string>& line = std::get<0>(event.value());
      if (!line) co_return;
      co_await post(room, name + ": " + *line);
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

spool::Task<void> chat(TcpStream stream, Room& room, std::chrono::seconds idle) {
  Lines client(std::move(stream), LinesCodec(1024));
  std::string name;
  try {
    co_await client.send("what is your name?");
    auto answer = co_await spool::timeout(idle, spool::next(client));
    if (answer.elapsed() || !answer.value()) co_return;
    name = std::move(*answer.value());
    co_await converse(client, room, name, idle);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name.empty() ? "a client" : name.c_str(), e.what());
  }
  if (!name.empty()) co_await post(room, "* " + name + " left");
}

// The operator's commands: "users", "stats" (polls per channel), "say TEXT".
spool::Task<void> admin(TcpStream stream, Room& room) {
  Lines console(std::move(stream), LinesCodec(1024));
  while (std::optional<std::string> line = co_await spool::next(console)) {
    if (*line == "users") {
      co_await console.send(std::to_string(room.hub.receiver_count()) + " in the room");
    } else if (*line == "stats") {
      std::string stats;
      for (const spool::ChannelMetrics& c : spool::Handle::current().metrics().channels) {
        stats += c.name + ": " + std::to_string(c.polled) + " polls; ";
      }
      co_await console.send(stats);
    } else if (line->starts_with("say ")) {
      co_await post(room, "* admin: " + line->substr(4));
    } else {
      co_await console.send("commands: users, stats, say TEXT");
    }
  }
}

// A plain spawn from a task goes to the spawner's channel: each connection runs on the
// level of the loop that accepted it.
spool::Task<void> accept_admins(TcpListener listener, Room& room) {
  for (;;) {
    auto [stream, peer] = co_await listener.accept();
    spool::spawn(admin(std::move(stream), room)).detach();
  }
}

spool::Task<void> accept_chatters(TcpListener listener, Room& room, std::chrono::seconds idle) {
  for (;;) {
    auto [stream, peer] = co_await listener.accept();
    spool::spawn(chat(std::move(stream), room, idle)).detach();
  }
}

spool::Task<void> serve(SocketAddr address, SocketAddr admin_address, Room& room,
                        std::chrono::seconds idle) {
  TcpListener chatters = TcpListener::bind(address);
  TcpListener admins = TcpListener::bind(admin_address);
  std::printf("listening on %s\n", chatters.local_addr().to_string().c_str());
  std::printf("admin on %s\n", admins.local_addr().to_string().c_str());
  std::fflush(stdout);
  spool::Handle rt = spool::Handle::current();
  auto a = rt.spawn_on(rt.channel("admin"), accept_admins(std::move(admins), room));
  auto c = rt.spawn_on(rt.channel("chat"), accept_chatters(std::move(chatters), room, idle));
  co_await spool::when_all(std::move(a), std::move(c));  // ends only if one fails
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
    SocketAddr admin_address = SocketAddr::parse(argc > 2 ? argv[2] : "127.0.0.1:6143");
    std::chrono::seconds idle = argc > 3 ? idle_seconds(argv[3]) : std::chrono::seconds(300);
    Room room;  // made before the runtime, so it outlives every task that uses it
    // Three levels, highest first; a worker always runs the highest level that has work.
    spool::Runtime rt =
        spool::Builder::multi_thread()
            .levels({spool::Level{"admin"}, spool::Level{"chat"}, spool::Level{"history"}})
            .build();
    rt.block_on(serve(address, admin_address, room, idle));
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "chat: %s\nusage: chat [address:port] [admin-address:port] [idle-seconds]\n",
                 e.what());
    return 1;
  }
}
