// mini-redis: a RESP2 server on spool. `mini-redis --help` lists the flags.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "server.hpp"
#include "spool/combinators/when_any.hpp"
#include "spool/signal.hpp"
#include "spool/spool.hpp"

namespace {

constexpr const char* kUsage = R"(usage: mini-redis [flags]
  --bind IP             the address to listen on (default 127.0.0.1; 0.0.0.0 for all)
  --port N              the port (default 6379; 0: any free one, printed at start)
  --max-connections N   connections served at once (default 250)
  --idle-timeout SECS   close a connection silent this long (default 300; 0: never)
  --max-bulk BYTES      the largest argument of a command (default 67108864)
  --max-args N          the most arguments of a command (default 65536)
  --max-query BYTES     the most bytes a connection may buffer of unparsed commands
                        (default 268435456)
  --max-query-total BYTES  the most bytes all connections together may buffer of large
                        commands, beyond 16 KiB each (default 536870912)
  --workers N           worker threads (default: one per CPU)
  --shards N            keyspace shards (default 64)
  --busy-poll USECS     how long an idle worker polls for I/O before it sleeps (default 50;
                        0: it sleeps at once)
  --tls-cert FILE       serve TLS with this certificate chain (PEM; with --tls-key)
  --tls-key FILE        the certificate's private key (PEM, unencrypted)
  --console PATH        serve spool's console on the Unix socket PATH (owner-only): watch it
                        with `spool-console PATH` (SPOOL_CONSOLE=PATH does the same)
SIGINT or SIGTERM stop it: it stops accepting, lets each connection finish the commands it
has read, and exits 0 once every connection has closed.
)";

struct Options {
  mini_redis::ServerConfig server;
  std::size_t workers = 0;
  std::chrono::microseconds busy_poll{50};
  std::string console;  // empty: SPOOL_CONSOLE's, if set
  bool help = false;
};

std::size_t number(std::string_view flag, const char* text, std::size_t max) {
  std::size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || text[pos] != '\0' || text[0] == '-' || v > max) {
    throw std::invalid_argument(std::string(flag) + " takes a number from 0 to " +
                                std::to_string(max) + ", not '" + text + "'");
  }
  return static_cast<std::size_t>(v);
}

Options parse_flags(int argc, char** argv) {
  Options o;
  constexpr std::size_t kMax = static_cast<std::size_t>(-1) >> 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    if (i + 1 == argc) throw std::invalid_argument(std::string(flag) + " needs a value");
    const char* value = argv[++i];
    if (flag == "--bind") {
      o.server.address = value;
    } else if (flag == "--port") {
      o.server.port = static_cast<std::uint16_t>(number(flag, value, 65535));
    } else if (flag == "--max-connections") {
      o.server.max_connections = number(flag, value, spool::Semaphore::max_permits);
    } else if (flag == "--idle-timeout") {
      o.server.idle_timeout = std::chrono::seconds(number(flag, value, 1u << 30));
    } else if (flag == "--max-bulk") {
      o.server.limits.max_bulk = number(flag, value, kMax);
    } else if (flag == "--max-args") {
      o.server.limits.max_args = number(flag, value, kMax);
    } else if (flag == "--max-query") {
      o.server.max_query = number(flag, value, kMax);
    } else if (flag == "--max-query-total") {
      o.server.max_query_total = number(flag, value, kMax);
    } else if (flag == "--workers") {
      o.workers = number(flag, value, 1024);
    } else if (flag == "--busy-poll") {
      o.busy_poll = std::chrono::microseconds(number(flag, value, 1'000'000));
    } else if (flag == "--tls-cert") {
      o.server.tls_cert_file = value;
    } else if (flag == "--tls-key") {
      o.server.tls_key_file = value;
    } else if (flag == "--console") {
      o.console = value;
    } else if (flag == "--shards") {
      o.server.shards = number(flag, value, 1u << 20);
    } else {
      throw std::invalid_argument("unknown flag '" + std::string(flag) + "'");
    }
  }
  if (o.server.max_connections == 0) throw std::invalid_argument("--max-connections must be > 0");
  return o;
}

// Shuts `server` down at the first SIGINT or SIGTERM.
spool::Task<void> shutdown_on_signal(mini_redis::Server& server, spool::Signal sigint,
                                     spool::Signal sigterm) {
  auto interrupt = std::move(sigint);
  auto terminate = std::move(sigterm);
  co_await spool::when_any(interrupt.recv(), terminate.recv());
  std::fprintf(stderr, "mini-redis: shutting down\n");
  server.shutdown();
}

spool::Task<void> run(const mini_redis::ServerConfig& config) {
  mini_redis::Server server(config);
  // The handlers first, then the line that scripts wait for.
  auto watcher = spool::spawn(spool::named(
      "signals", shutdown_on_signal(server, spool::signal(SIGINT), spool::signal(SIGTERM))));
  std::printf("mini-redis: listening on %s\n", server.local_addr().to_string().c_str());
  std::fflush(stdout);
  co_await server.run();
  co_await watcher;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = parse_flags(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mini-redis: %s\n%s", e.what(), kUsage);
    return 2;
  }
  if (options.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    auto builder = spool::Builder::multi_thread();
    if (options.workers != 0) builder.worker_threads(options.workers);
    builder.busy_poll(options.busy_poll);
    if (!options.console.empty()) builder.console(options.console);
    spool::Runtime rt = builder.build();
    rt.block_on(run(options.server));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mini-redis: %s\n", e.what());
    return 1;
  }
}
