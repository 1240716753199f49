// mini-redis-cli: sends one command to a RESP2 server and prints the reply as redis-cli does
// when its output is not a terminal. `mini-redis-cli [-h HOST] [-p PORT] COMMAND [ARG...]`
// (HOST: a name or an address; each address it resolves to is tried in turn); exits 1 on an
// error reply, 2 on bad usage or a connection that fails.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "client.hpp"
#include "spool/spool.hpp"

namespace {

spool::Task<mini_redis::Reply> ask(std::string host_and_port, std::vector<std::string> args) {
  auto client = co_await mini_redis::Client::connect(std::move(host_and_port));
  co_return co_await client.command(std::move(args));
}

std::uint16_t parse_port(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 5 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  const unsigned long v = digits ? std::stoul(text) : 0;
  if (v == 0 || v > 65535) {
    throw std::invalid_argument("-p takes a port from 1 to 65535, not '" + text + "'");
  }
  return static_cast<std::uint16_t>(v);
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::vector<std::string> args;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string_view a = argv[i];
      if (args.empty() && (a == "-h" || a == "-p") && i + 1 < argc) {
        if (a == "-h") {
          host = argv[++i];
        } else {
          port = parse_port(argv[++i]);
        }
      } else {
        args.emplace_back(a);
      }
    }
    if (args.empty()) throw std::invalid_argument("no command given");
    // "[::1]:6379" for an IPv6 address, "host:6379" otherwise.
    const std::string target = (host.find(':') == std::string::npos ? host : "[" + host + "]") +
                               ":" + std::to_string(port);
    const mini_redis::Reply reply = spool::block_on(ask(target, std::move(args)));
    std::string out;
    mini_redis::print_reply(out, reply);
    std::fputs(out.c_str(), stdout);
    return reply.kind == mini_redis::Reply::Kind::kError ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "mini-redis-cli: %s\nusage: mini-redis-cli [-h HOST] [-p PORT] COMMAND [ARG...]\n",
                 e.what());
    return 2;
  }
}
