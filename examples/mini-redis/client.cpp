#include "client.hpp"

#include <charconv>
#include <stdexcept>

#include "resp.hpp"

namespace mini_redis {

namespace {

// The line without its "\r\n"; throws when it does not end so.
std::string_view chomp(const std::string& line) {
  if (line.size() < 3 || line[line.size() - 2] != '\r' || line.back() != '\n') {
    throw std::runtime_error("mini-redis client: a reply line without CRLF: '" + line + "'");
  }
  return std::string_view(line).substr(1, line.size() - 3);
}

std::int64_t to_int(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) {
    throw std::runtime_error("mini-redis client: not a number in a reply: '" + std::string(s) +
                             "'");
  }
  return v;
}

void encode(std::string& out, const std::vector<std::string>& args) {
  write_array_header(out, args.size());
  for (const std::string& a : args) write_bulk(out, a);
}

}  // namespace

void print_reply(std::string& out, const Reply& reply) {
  switch (reply.kind) {
    case Reply::Kind::kInteger:
      out += std::to_string(reply.integer);
      break;
    case Reply::Kind::kArray:
      for (const Reply& e : reply.elements) print_reply(out, e);
      return;  // each element ended its own line
    case Reply::Kind::kNil:
    case Reply::Kind::kNilArray:
      break;
    default:
      out += reply.text;
  }
  out += '\n';
}

spool::Task<Client> Client::connect(spool::net::SocketAddr addr) {
  co_return Client(co_await spool::net::TcpStream::connect(addr));
}

spool::Task<Client> Client::connect(std::string host_and_port) {
  co_return Client(co_await spool::net::TcpStream::connect(host_and_port));
}

spool::Task<void> Client::send(std::vector<std::string> args) {
  std::string out;
  encode(out, args);
  co_await conn_.get().write_all(out);
}

spool::Task<Reply> Client::command(std::vector<std::string> args) {
  co_await send(std::move(args));
  co_return co_await read_reply();
}

spool::Task<Reply> Client::read_reply() {
  std::string line;
  if (co_await conn_.read_line(line, 64 * 1024) == 0) {
    throw spool::net::UnexpectedEof("mini-redis client: the server closed the connection");
  }
  const std::string_view body = chomp(line);
  Reply r;
  switch (line[0]) {
    case '+':
      r.kind = Reply::Kind::kSimple;
      r.text = body;
      break;
    case '-':
      r.kind = Reply::Kind::kError;
      r.text = body;
      break;
    case ':':
      r.kind = Reply::Kind::kInteger;
      r.integer = to_int(body);
      break;
    case '$': {
      const std::int64_t n = to_int(body);
      if (n < 0) break;  // nil
      r.kind = Reply::Kind::kBulk;
      r.text.resize(static_cast<std::size_t>(n) + 2);
      co_await conn_.read_exact(std::span(r.text.data(), r.text.size()));
      r.text.resize(static_cast<std::size_t>(n));
      break;
    }
    case '*': {
      const std::int64_t n = to_int(body);
      if (n < 0) {
        r.kind = Reply::Kind::kNilArray;
        break;
      }
      r.kind = Reply::Kind::kArray;
      for (std::int64_t i = 0; i < n; ++i) r.elements.push_back(co_await read_reply());
      break;
    }
    default:
      throw std::runtime_error("mini-redis client: not a RESP2 reply: '" + line + "'");
  }
  co_return r;
}

}  // namespace mini_redis
