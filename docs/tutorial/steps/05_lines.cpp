// Step 5: framing — a line protocol with codec::Framed and LinesCodec.
#include <cctype>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "spool/spool.hpp"

using spool::codec::Framed;
using spool::codec::LinesCodec;
using spool::net::SocketAddr;
using spool::net::TcpListener;
using spool::net::TcpStream;

// The protocol: one command a line, one line back.
//   upper TEXT    TEXT in capitals
//   reverse TEXT  TEXT backwards
std::string answer(const std::string& line) {
  std::size_t space = line.find(' ');
  std::string command = line.substr(0, space);
  std::string text = space == std::string::npos ? "" : line.substr(space + 1);
  if (command == "upper") {
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return text;
  }
  if (command == "reverse") return std::string(text.rbegin(), text.rend());
  return "error: unknown command '" + command + "'";
}

spool::Task<void> serve_client(TcpStream stream, SocketAddr peer) {
  // Framed reads the socket as a stream of lines and writes lines to it. The codec bounds
  // a line, so that a client that never sends "\n" cannot make the buffer grow for ever.
  Framed lines(std::move(stream), LinesCodec(1024));
  try {
    for (;;) {
      std::string reply;
      try {
        std::optional<std::string> line = co_await spool::next(lines);  // a whole line
        if (!line) break;  // the client closed its side
        reply = answer(*line);
      } catch (const spool::codec::FrameTooLong&) {
        reply = "error: line too long";  // the codec skips the rest of that line
      }
      co_await lines.send(reply);  // encodes the line and its "\n", and writes them
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", peer.to_string().c_str(), e.what());
  }
}

spool::Task<void> serve(SocketAddr address) {
  TcpListener listener = TcpListener::bind(address);
  std::printf("listening on %s\n", listener.local_addr().to_string().c_str());
  std::fflush(stdout);
  for (;;) {
    auto [stream, peer] = co_await listener.accept();
    spool::spawn(serve_client(std::move(stream), peer)).detach();
  }
}

int main(int argc, char** argv) {
  try {
    SocketAddr address = SocketAddr::parse(argc > 1 ? argv[1] : "127.0.0.1:6142");
    spool::Runtime rt = spool::Builder::multi_thread().build();
    rt.block_on(serve(address));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lines: %s\nusage: lines [address:port]\n", e.what());
    return 1;
  }
}
