#include "server.hpp"

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "connection.hpp"
#include "spool/core/poll_fn.hpp"
#include "spool/runtime.hpp"
#include "spool/sync/mpsc.hpp"
#include "spool/time.hpp"

namespace mini_redis {

namespace {

// How often keys that expired and were not touched again are erased.
constexpr auto kPurgeEvery = std::chrono::milliseconds(100);

// `fut`, bounded by the shutdown and the idle timeout (when there is one): a TLS client that
// stalls its handshake or stops reading holds its slot no longer than an idle one, nor the
// shutdown at all. `fut` is polled first, so what completes at once (close_notify to a
// client that reads) still does after the shutdown. nullopt: given up.
template <class F>
spool::Task<std::optional<spool::future_output_t<F>>> until_idle_or_shutdown(
    const ServerState& state, F fut) {
  auto stop = state.shutdown.cancelled();
  std::optional<spool::Sleep> idle;
  if (state.config.idle_timeout.count() > 0) idle.emplace(spool::sleep(state.config.idle_timeout));
  std::optional<spool::future_output_t<F>> out;
  co_await spool::poll_fn([&](spool::Context& cx) -> spool::Poll<int> {
    if (auto p = fut.poll(cx); p.is_ready()) {
      out.emplace(std::move(p).value());
      return 0;
    }
    if (stop.poll(cx).is_ready() || (idle && idle->poll(cx).is_ready())) return 0;
    return spool::pending;
  });
  co_return out;
}

// The client's stream: the TCP connection, or TLS over it once its handshake is done
// (nullopt: the handshake did not finish within the idle timeout or before the shutdown).
spool::Task<std::optional<ClientStream>> client_stream(spool::net::TcpStream tcp,
                                                       [[maybe_unused]] const ServerState& state) {
#ifdef MINI_REDIS_HAVE_TLS
  if (state.tls) {
    auto tls = co_await until_idle_or_shutdown(state, state.tls->accept(std::move(tcp)));
    if (!tls) co_return std::nullopt;
    co_return ClientStream(std::move(*tls));
  }
#endif
  co_return ClientStream(std::move(tcp));
}

// Serves one connection, holding `slot` (a local, not the parameter, so that it goes when
// the connection ends, not when the task's frame does). Over TLS it ends with close_notify.
spool::Task<void> serve(spool::net::TcpStream tcp, ServerState& state, ConnectionSlot slot) {
  const ConnectionSlot held = std::move(slot);
  try {
    auto stream = co_await client_stream(std::move(tcp), state);
    if (!stream) co_return;
    Connection connection(std::move(*stream), state);
    co_await connection.run();
    (void)co_await until_idle_or_shutdown(state, [](Connection& c) -> spool::Task<int> {
      co_await c.shutdown();
      co_return 0;
    }(connection));
  } catch (const std::exception&) {
    // A peer that reset the connection, a write to a closed socket, a failed TLS handshake:
    // that connection ends, and only that one.
  }
}

// The TLS acceptor of `config`'s certificate, if it has one.
void set_up_tls(ServerState& state) {
  const ServerConfig& c = state.config;
  if (c.tls_cert_file.empty() && c.tls_key_file.empty()) return;
  if (c.tls_cert_file.empty() || c.tls_key_file.empty()) {
    throw std::invalid_argument("--tls-cert and --tls-key go together: give both");
  }
#ifdef MINI_REDIS_HAVE_TLS
  spool::tls::TlsContextBuilder b(spool::tls::Role::kServer);
  b.certificate_chain_file(c.tls_cert_file).private_key_file(c.tls_key_file);
  state.tls.emplace(b.build());
#else
  throw std::invalid_argument(
      "this mini-redis was built without spool::tls (OpenSSL 3 was not found): no TLS");
#endif
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
      listener_(spool::net::TcpListener::bind(address_of(config))) {
  set_up_tls(*state_);
}

spool::Task<void> Server::run() {
  ServerState& state = *state_;
  auto [done, all_closed] = spool::mpsc::channel<int>(1);
  auto purger = spool::spawn(spool::named("purge expired", purge_expired(state)));
  for (;;) {
    auto permit = co_await state.shutdown.run_until_cancelled(state.connections.acquire());
    if (!permit) break;
    try {
      auto accepted = co_await state.shutdown.run_until_cancelled(listener_.accept());
      if (!accepted) break;
      // Named by the peer: spool-console and Runtime::dump() show which connection is which.
      std::string name = "conn " + accepted->second.to_string();
      (void)spool::spawn(spool::named(
          std::move(name),
          serve(std::move(accepted->first), state, ConnectionSlot{done, std::move(*permit)})));
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
