// Step 4: a TCP echo server — one task per connection.
#include <array>
#include <cstdio>
#include <exception>
#include <span>
#include <utility>

#include "spool/spool.hpp"

using spool::net::SocketAddr;
using spool::net::TcpListener;
using spool::net::TcpStream;

// Sends back every byte the client sends, until the client closes its side.
spool::Task<void> echo(TcpStream stream, SocketAddr peer) {
  std::array<char, 4096> buf;
  try {
    for (;;) {
      std::size_t n = co_await stream.read(buf);  // waits for bytes; 0: the client closed
      if (n == 0) break;
      co_await stream.write_all(std::span(buf.data(), n));
    }
  } catch (const std::exception& e) {  // a reset, a broken pipe: this connection ends
    std::fprintf(stderr, "%s: %s\n", peer.to_string().c_str(), e.what());
  }
}  // the stream is destroyed here: the socket closes

spool::Task<void> serve(SocketAddr address) {
  TcpListener listener = TcpListener::bind(address);
  std::printf("listening on %s\n", listener.local_addr().to_string().c_str());
  std::fflush(stdout);
  for (;;) {
    auto [stream, peer] = co_await listener.accept();
    // A task of its own for each connection, so that one slow client holds up no other.
    spool::spawn(echo(std::move(stream), peer)).detach();
  }
}

int main(int argc, char** argv) {
  try {
    SocketAddr address = SocketAddr::parse(argc > 1 ? argv[1] : "127.0.0.1:6142");
    spool::Runtime rt = spool::Builder::multi_thread().build();
    rt.block_on(serve(address));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "echo: %s\nusage: echo [address:port]\n", e.what());
    return 1;
  }
}
