#include "resp.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

namespace mini_redis {

namespace {

// The position of the "\r\n" that ends the line starting at `from`, or npos when the
// buffer ends first. A line longer than `max` throws (a peer that never ends its line).
std::size_t line_end(std::span<const char> buf, std::size_t from, std::size_t max) {
  const std::size_t stop = std::min(buf.size(), from + max + 2);
  for (std::size_t i = from; i + 1 < stop; ++i) {
    if (buf[i] == '\r' && buf[i + 1] == '\n') return i;
  }
  if (buf.size() - from > max + 1) throw ProtocolError("line too long");
  return std::string_view::npos;
}

// A decimal number in [from, end) (a sign allowed: the callers refuse negative lengths).
std::int64_t parse_length(std::span<const char> buf, std::size_t from, std::size_t end,
                          const char* what) {
  std::int64_t v = 0;
  const char* first = buf.data() + from;
  const char* last = buf.data() + end;
  const auto [stop, ec] = std::from_chars(first, last, v);
  if (ec != std::errc{} || stop != last || first == last) {
    throw ProtocolError(std::string("invalid ") + what);
  }
  return v;
}

constexpr std::size_t kMaxHeader = 32;  // "*<digits>" / "$<digits>": a length fits in 20

Parsed parse_inline(std::span<const char> buf, const Limits& limits) {
  const std::size_t end = line_end(buf, 0, limits.max_inline);
  Parsed p;
  if (end == std::string_view::npos) return p;
  p.complete = true;
  p.consumed = end + 2;
  std::string_view line(buf.data(), end);
  while (!line.empty()) {
    const std::size_t start = line.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    line.remove_prefix(start);
    const std::size_t stop = std::min(line.find(' '), line.size());
    if (p.args.size() == limits.max_args) throw ProtocolError("too many arguments");
    p.args.emplace_back(line.substr(0, stop));
    line.remove_prefix(stop);
  }
  return p;
}

}  // namespace

Parsed parse_command(std::span<const char> buf, const Limits& limits) {
  Parsed p;
  if (buf.empty()) return p;
  if (buf[0] != '*') return parse_inline(buf, limits);
  std::size_t end = line_end(buf, 1, kMaxHeader);
  if (end == std::string_view::npos) return p;
  const std::int64_t n = parse_length(buf, 1, end, "multibulk length");
  if (n < 0 || static_cast<std::uint64_t>(n) > limits.max_args) {
    throw ProtocolError("invalid multibulk length");
  }
  std::size_t pos = end + 2;
  // Where each argument lies: the strings are made only once the whole command is here, so
  // a large command that arrives in many reads is not copied again at each one.
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  spans.reserve(static_cast<std::size_t>(std::min<std::int64_t>(n, 64)));
  for (std::int64_t i = 0; i < n; ++i) {
    if (pos >= buf.size()) return p;
    if (buf[pos] != '$') {
      throw ProtocolError(std::string("expected '$', got '") + buf[pos] + "'");
    }
    end = line_end(buf, pos + 1, kMaxHeader);
    if (end == std::string_view::npos) return p;
    const std::int64_t len = parse_length(buf, pos + 1, end, "bulk length");
    if (len < 0 || static_cast<std::uint64_t>(len) > limits.max_bulk) {
      throw ProtocolError("invalid bulk length");
    }
    const std::size_t data = end + 2;
    const auto ulen = static_cast<std::size_t>(len);
    if (buf.size() - data < ulen + 2) return p;  // the argument is not all here yet
    if (buf[data + ulen] != '\r' || buf[data + ulen + 1] != '\n') {
      throw ProtocolError("bulk string not terminated by CRLF");
    }
    spans.emplace_back(data, ulen);
    pos = data + ulen + 2;
  }
  p.complete = true;
  p.consumed = pos;
  p.args.reserve(spans.size());
  for (auto [at, len] : spans) p.args.emplace_back(buf.data() + at, len);
  return p;
}

void write_simple(std::string& out, std::string_view s) {
  out += '+';
  out += s;
  out += "\r\n";
}

void write_error(std::string& out, std::string_view msg) {
  out += '-';
  const std::size_t at = out.size();
  out += msg;
  // An error is one line: a '\r' or '\n' from the client's input (a command's name, an
  // option) becomes a space, as in redis-server, so it cannot end the line early and forge
  // a reply.
  std::replace_if(
      out.begin() + static_cast<std::ptrdiff_t>(at), out.end(),
      [](char c) { return c == '\r' || c == '\n'; }, ' ');
  out += "\r\n";
}

void write_integer(std::string& out, std::int64_t v) {
  out += ':';
  out += std::to_string(v);
  out += "\r\n";
}

void write_bulk(std::string& out, std::string_view s) {
  out += '$';
  out += std::to_string(s.size());
  out += "\r\n";
  out += s;
  out += "\r\n";
}

void write_null(std::string& out) { out += "$-1\r\n"; }

void write_array_header(std::string& out, std::size_t n) {
  out += '*';
  out += std::to_string(n);
  out += "\r\n";
}

void write_null_array(std::string& out) { out += "*-1\r\n"; }

}  // namespace mini_redis
