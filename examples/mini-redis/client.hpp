// mini-redis's client: sends commands as RESP arrays and reads the replies (the tests and
// mini-redis-cli use it; it talks to redis-server too).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spool/net.hpp"

namespace mini_redis {

/// One RESP2 reply.
struct Reply {
  /// Which RESP2 type it is.
  enum class Kind { kSimple, kError, kInteger, kBulk, kNil, kArray, kNilArray };
  Kind kind = Kind::kNil;       ///< its type
  std::string text;             ///< kSimple, kError (without the '-'), kBulk
  std::int64_t integer = 0;     ///< kInteger
  std::vector<Reply> elements;  ///< kArray
};

/// `reply` as redis-cli prints it when its output is not a terminal: one line per value,
/// arrays flattened, nil as an empty line, errors as their text (in `out`).
void print_reply(std::string& out, const Reply& reply);

/// A connection to a RESP2 server. One task uses it at a time.
class Client {
 public:
  /// Connects to `addr`. Throws std::system_error when it cannot.
  static spool::Task<Client> connect(spool::net::SocketAddr addr);
  /// Connects to `host_and_port` ("localhost:6379"), trying each address it resolves to
  /// (spool::net::TcpStream::connect). Throws std::system_error when none accepts.
  static spool::Task<Client> connect(std::string host_and_port);

  /// Sends `args` as one command and reads its reply. Throws std::runtime_error on a reply
  /// that is not RESP2, UnexpectedEof when the server closes the connection first.
  spool::Task<Reply> command(std::vector<std::string> args);
  /// Sends `args` as one command without reading a reply (SUBSCRIBE's come as messages).
  spool::Task<void> send(std::vector<std::string> args);
  /// Reads the next reply (a pub/sub message, say).
  spool::Task<Reply> read_reply();

 private:
  explicit Client(spool::net::TcpStream stream) : conn_(std::move(stream)) {}
  spool::net::BufReader<spool::net::TcpStream> conn_;
};

}  // namespace mini_redis
