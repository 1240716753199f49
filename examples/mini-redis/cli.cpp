// mini-redis-cli: sends one command to a RESP2 server and prints the reply as redis-cli does
// when its output is not a terminal. `mini-redis-cli [-h IP] [-p PORT] COMMAND [ARG...]`;
// exits 1 on an error reply, 2 on bad usage or a connection that fails.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "client.hpp"
#include "spool/spool.hpp"

namespace {

spool::Task<mini_redis::Reply> ask(spool::net::SocketAddr addr, std::vector<std::string> args) {
  auto client = co_await mini_redis::Client::connect(addr);
  co_return co_await client.command(std::move(args));
}

}  // namespace

int main(int argc, char** argv) {
  std::string ip = "127.0.0.1";
  std::uint16_t port = 6379;
  std::vector<std::string> args;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (args.empty() && (a == "-h" || a == "-p") && i + 1 < argc) {
        if (a == "-h") {
          ip = argv[++i];
        } else {
          port = static_cast<std::uint16_t>(std::stoul(argv[++i]));
        }
      } else {
        args.emplace_back(a);
      }
    }
    if (args.empty()) throw std::invalid_argument("no command given");
    const mini_redis::Reply reply =
        spool::block_on(ask(spool::net::SocketAddr(ip, port), std::move(args)));
    std::string out;
    mini_redis::print_reply(out, reply);
    std::fputs(out.c_str(), stdout);
    return reply.kind == mini_redis::Reply::Kind::kError ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "mini-redis-cli: %s\nusage: mini-redis-cli [-h IP] [-p PORT] COMMAND [ARG...]\n",
                 e.what());
    return 2;
  }
}
