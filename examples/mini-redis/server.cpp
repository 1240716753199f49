#include "server.hpp"

#include <cstdio>
#include <system_error>
#include <utility>

#include "connection.hpp"
#include "spool/runtime.hpp"
#include "spool/sync/mpsc.hpp"
#include "spool/time.hpp"

namespace mini_redis {

namespace {

// How often keys that expired and were not touched again are erased.
constexpr auto kPurgeEvery = std::chrono::milliseconds(100);

// Serves one connection, holding `slot` (a local, not the parameter, so that it goes when
// the connection ends, not when the task's frame does).
spool::Task<void> serve(spool::net::TcpStream stream, ServerState& state, ConnectionSlot slot) {
  const ConnectionSlot held = std::move(slot);
  try {
    Connection connection(std::move(stream), state);
    co_await connection.run();
  } catch (const std::exception&) {
    // A peer that reset the connection, a write to a closed socket: that connection ends,
    // and only that one.
  }
}

// The active half of expiry (Keyspace::purge_expired), until the shutdown.
spool::Task<void> purge_expired(ServerState& state) {
  while (!state.shutdown.is_cancelled()) {
    auto tick = spool::sleep(kPurgeEvery);
    if (!co_await state.shutdown.run_until_cancelled(std::move(tick))) co_return;
    state.keys.purge_expired(now_ms());
  }
}

spool::net::SocketAddr address_of(const ServerConfig& config) {
  return spool::net::SocketAddr(config.address, config.port);
}

}  // namespace

Server::Server(const ServerConfig& config)
    : state_(std::make_unique<ServerState>(config)),
      listener_(spool::net::TcpListener::bind(address_of(config))) {}

spool::Task<void> Server::run() {
  ServerState& state = *state_;
  auto [done, all_closed] = spool::mpsc::channel<int>(1);
  auto purger = spool::spawn(purge_expired(state));
  for (;;) {
    auto permit = co_await state.shutdown.run_until_cancelled(state.connections.acquire());
    if (!permit) break;
    try {
      auto accepted = co_await state.shutdown.run_until_cancelled(listener_.accept());
      if (!accepted) break;
      (void)spool::spawn(
          serve(std::move(accepted->first), state, ConnectionSlot{done, std::move(*permit)}));
    } catch (const std::system_error& e) {
      // accept(2) failed for this connection only (ECONNABORTED...); EMFILE and ENFILE
      // back off inside accept. Say so and go on.
      std::fprintf(stderr, "mini-redis: accept: %s\n", e.what());
    }
  }
  { const auto last = std::move(done); }  // the connections hold the other senders
  (void)co_await all_closed.recv();       // nullopt once every connection has ended
  co_await purger;
}

}  // namespace mini_redis
