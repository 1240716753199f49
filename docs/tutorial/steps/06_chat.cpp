// Step 6: a chat server — shared state in a broadcast channel, and select.
#include <cstdio>
#include <exception>
#include <optional>
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

// Until the client leaves: its lines go to everyone, everyone's messages go to it.
spool::Task<void> converse(Lines& client, Hub& hub, const std::string& name) {
  spool::broadcast::Receiver<std::string> inbox = hub.subscribe();
  hub.send("* " + name + " joined");  // after subscribe(): the newcomer sees it too
  for (;;) {
    // Whichever comes first: the client's next line, or the next message for everyone.
    // select drops the other future, which loses nothing: neither had taken anything.
    auto event = co_await spool::select(spool::next(client), inbox.recv());
    if (event.index() == 0) {
      std::optional<std::string>& line = std::get<0>(event);
      if (!line) co_return;  // the client closed its side
      hub.send(name + ": " + *line);
    } else {
      spool::broadcast::RecvResult<std::string>& message = std::get<1>(event);
      if (message.lagged()) {  // too slow a reader: the channel dropped its oldest messages
        co_await client.send("* (missed " + std::to_string(message.missed()) + " messages)");
      } else {
        co_await client.send(*message);
      }
    }
  }
}

spool::Task<void> chat(TcpStream stream, Hub hub) {
  Lines client(std::move(stream), LinesCodec(1024));
  std::string name;
  try {
    co_await client.send("what is your name?");
    std::optional<std::string> answer = co_await spool::next(client);
    if (!answer) co_return;
    name = std::move(*answer);
    co_await converse(client, hub, name);
  } catch (const std::exception& e) {  // a reset, a line too long: this client leaves
    std::fprintf(stderr, "%s: %s\n", name.empty() ? "a client" : name.c_str(), e.what());
  }
  if (!name.empty()) hub.send("* " + name + " left");
}

spool::Task<void> serve(SocketAddr address) {
  TcpListener listener = TcpListener::bind(address);
  std::printf("listening on %s\n", listener.local_addr().to_string().c_str());
  std::fflush(stdout);
  // The last 64 messages are kept for receivers that are behind.
  Hub hub = spool::broadcast::channel<std::string>(64).first;
  for (;;) {
    auto [stream, peer] = co_await listener.accept();
    spool::spawn(chat(std::move(stream), hub)).detach();
  }
}

int main(int argc, char** argv) {
  try {
    SocketAddr address = SocketAddr::parse(argc > 1 ? argv[1] : "127.0.0.1:6142");
    spool::Runtime rt = spool::Builder::multi_thread().build();
    rt.block_on(serve(address));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chat: %s\nusage: chat [address:port]\n", e.what());
    return 1;
  }
}
