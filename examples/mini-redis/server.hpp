// mini-redis's server: the listener, the connection limit, graceful shutdown, and the state
// the connections share (keyspace, pub/sub).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "keyspace.hpp"
#include "memory_budget.hpp"
#include "pubsub.hpp"
#include "resp.hpp"
#include "spool/net.hpp"
#ifdef MINI_REDIS_HAVE_TLS
#include "spool/tls.hpp"
#endif
#include "spool/sync/cancellation_token.hpp"
#include "spool/sync/mpsc.hpp"
#include "spool/sync/semaphore.hpp"

namespace mini_redis {

/// How a server listens and what it allows. The defaults are safe on a shared machine.
struct ServerConfig {
  std::string address = "127.0.0.1";  ///< the IP to bind (numeric; "0.0.0.0" for every one)
  std::uint16_t port = 6379;          ///< the port to bind (0: any free one)
  /// Connections served at once; more wait in the listen backlog (as tokio's mini-redis).
  std::size_t max_connections = 250;
  /// A connection that sends nothing for this long is closed (0: never).
  std::chrono::milliseconds idle_timeout = std::chrono::minutes(5);
  Limits limits;  ///< bounds on one request (see Limits)
  /// The most bytes a connection buffers of commands not yet complete (redis-server's
  /// client-query-buffer-limit): past it, an error and the connection closes.
  std::size_t max_query = 256 * 1024 * 1024;
  /// The most bytes all connections together may buffer of large commands (beyond the
  /// 16 KiB each holds anyway): past it, the connection whose buffer would grow gets an
  /// error and closes, so that many clients sending large commands at once cannot exhaust
  /// memory.
  std::size_t max_query_total = 512 * 1024 * 1024;
  std::size_t shards = 64;  ///< keyspace shards (more: less waiting between workers)
  /// Serves TLS with this certificate chain and key (PEM files); both empty: plain TCP.
  std::string tls_cert_file;
  std::string tls_key_file;  ///< (see tls_cert_file)
};

/// What the connections share. Lives as long as the Server, which outlives them.
struct ServerState {
  /// The state of a server configured by `c`.
  explicit ServerState(const ServerConfig& c)
      : config(c),
        keys(c.shards),
        connections(c.max_connections),
        query_budget(c.max_query_total) {}

  ServerConfig config;                ///< as given to the Server
  Keyspace keys;                      ///< every key
  PubSub pubsub;                      ///< every channel's subscribers
  spool::Semaphore connections;       ///< one permit per connection served
  MemoryBudget query_budget;          ///< of config.max_query_total
  spool::CancellationToken shutdown;  ///< cancelled by Server::shutdown
#ifdef MINI_REDIS_HAVE_TLS
  /// The TLS handshakes of every connection, when config has a certificate.
  std::optional<spool::tls::TlsAcceptor> tls;
#endif
};

/// What a connection's task holds while it serves: its permit of the connection limit, and a
/// sender whose end tells Server::run() that this connection is gone. The permit goes back
/// first: once the last sender is gone, run() may return and its caller destroy the server,
/// and with it the semaphore that the permit returns to.
struct ConnectionSlot {
  spool::mpsc::Sender<int> alive;  ///< declared first, so destroyed last
  spool::SemaphorePermit permit;   ///< of ServerState::connections
};

/// A RESP2 server (see the README for its commands). Bind it, then co_await run() in a spool
/// runtime: it serves until shutdown().
class Server {
 public:
  /// Binds `config.address`:`config.port`. Throws std::system_error naming the address when
  /// it cannot (in use, not local), std::invalid_argument for an address that is not numeric,
  /// and, with a TLS certificate, spool::tls::TlsError naming a file refused (or
  /// std::invalid_argument when mini-redis was built without spool::tls).
  explicit Server(const ServerConfig& config);

  /// The address it listens on (its port, when the config asked for port 0).
  spool::net::SocketAddr local_addr() const { return listener_.local_addr(); }

  /// Serves until shutdown(): accepts connections (at most max_connections at once) and
  /// serves each in its own task. After shutdown() it stops accepting, lets each connection
  /// finish the commands it has read, waits for every connection to close, and returns.
  spool::Task<void> run();

  /// Asks run() to stop (from any thread; idempotent).
  void shutdown() { state_->shutdown.cancel(); }

 private:
  std::unique_ptr<ServerState> state_;
  spool::net::TcpListener listener_;
};

}  // namespace mini_redis
