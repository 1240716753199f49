#include "resp.hpp"

#include <algorithm>
#include <cctype>
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

// Sets out.args to the `n` arguments `at(i)` gives, reusing the strings already there.
template <class At>
void assign_args(Parsed& out, std::size_t n, At at) {
  if (out.args.size() < n) out.args.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.args[i].assign(at(i));
  out.args.resize(n);
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

int hex_value(char c) {
  return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;  // after is_hex
}

// What `\c` stands for inside double quotes.
char unescape(char c) {
  switch (c) {
    case 'n':
      return '\n';
    case 'r':
      return '\r';
    case 't':
      return '\t';
    case 'b':
      return '\b';
    case 'a':
      return '\a';
    default:
      return c;  // \\, \" and any other character: itself
  }
}

// The character after a closing quote must end the argument (a blank, the end of the line,
// or a NUL byte, which ends it too).
void expect_end_of_argument(std::string_view line, std::size_t after_quote) {
  if (after_quote < line.size() && line[after_quote] != '\0' &&
      std::isspace(static_cast<unsigned char>(line[after_quote])) == 0) {
    throw ProtocolError("unbalanced quotes in request");
  }
}

// Takes the next character of a quoted argument, line[i], or the escape it starts, into
// `arg` and moves `i` past it; true if it was the closing `quote`. Double quotes know every
// escape, single quotes only \'. Throws ProtocolError at the end of the line (or a NUL).
bool take_quoted(std::string_view line, std::size_t& i, char quote, std::string& arg) {
  if (i == line.size() || line[i] == '\0') throw ProtocolError("unbalanced quotes in request");
  const char c = line[i];
  if (c == quote) {
    expect_end_of_argument(line, i + 1);
    ++i;
    return true;
  }
  if (c == '\\' && i + 1 < line.size()) {
    const char next = line[i + 1];
    if (quote == '"' && next == 'x' && i + 3 < line.size() && is_hex(line[i + 2]) &&
        is_hex(line[i + 3])) {
      arg += static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3]));
      i += 4;
      return false;
    }
    if (quote == '"' || next == '\'') {
      arg += quote == '"' ? unescape(next) : next;
      i += 2;
      return false;
    }
  }
  arg += c;
  ++i;
  return false;
}

// Splits an inline line into `out.args` (reusing its strings) as redis-server does
// (sdssplitargs): arguments separated by blanks; "double quotes" with the escapes \n \r \t
// \b \a \xHH and \<any> (that character), 'single quotes' with \' only; a quote may open
// in the middle of a word (a"b c" is "ab c") and must close at the end of one. A NUL byte
// ends the arguments, as the end of sdssplitargs' C string does (redis-server itself never
// answers a line with a NUL in it: it looks for the line's end as a C string). Throws
// ProtocolError for unbalanced quotes.
void split_inline(std::string_view line, const Limits& limits, Parsed& out) {
  std::size_t n = 0;
  std::size_t i = 0;
  for (;;) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])) != 0) ++i;
    if (i == line.size() || line[i] == '\0') break;
    if (n == limits.max_args) throw ProtocolError("too many arguments");
    if (out.args.size() == n) out.args.emplace_back();
    std::string& arg = out.args[n++];
    arg.clear();
    char quote = 0;  // the quote the argument is inside, if any
    for (;;) {
      if (quote != 0) {
        if (take_quoted(line, i, quote, arg)) break;
        continue;
      }
      const char c = i < line.size() ? line[i] : '\0';
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0') break;  // (skipped next)
      if (c == '"' || c == '\'') {
        quote = c;
      } else {
        arg += c;
      }
      ++i;
    }
  }
  out.args.resize(n);
}

// An inline command, as redis-server reads one: a line ended by "\n" (a "\r" before it is
// dropped: telnet and nc users send either), split by split_inline.
void parse_inline(std::span<const char> buf, const Limits& limits, Parsed& out) {
  const std::size_t stop = std::min(buf.size(), limits.max_inline + 2);
  const auto from = buf.begin() + static_cast<std::ptrdiff_t>(std::min(out.resume, stop));
  const auto lf = std::find(from, buf.begin() + static_cast<std::ptrdiff_t>(stop), '\n');
  if (lf == buf.begin() + static_cast<std::ptrdiff_t>(stop)) {
    if (buf.size() > limits.max_inline + 1) throw ProtocolError("line too long");
    out.resume = stop;  // searched up to here
    return;
  }
  const auto end = static_cast<std::size_t>(lf - buf.begin());
  std::string_view line(buf.data(), end);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > limits.max_inline) throw ProtocolError("line too long");
  split_inline(line, limits, out);
  out.complete = true;
  out.consumed = end + 1;
  out.resume = 0;
}

// An array of bulk strings, from out.resume on (see Parsed::resume).
void parse_array(std::span<const char> buf, const Limits& limits, Parsed& out) {
  std::size_t pos = out.resume;
  if (pos == 0) {
    const std::size_t end = line_end(buf, 1, kMaxHeader);
    if (end == std::string_view::npos) return;
    const std::int64_t n = parse_length(buf, 1, end, "multibulk length");
    if (n < 0 || static_cast<std::uint64_t>(n) > limits.max_args) {
      throw ProtocolError("invalid multibulk length");
    }
    out.expected = static_cast<std::size_t>(n);
    // Where each argument lies: the strings are made only once the whole command is here,
    // so a large command that arrives in many reads is not copied again at each one.
    out.spans.clear();
    pos = end + 2;
  }
  while (out.spans.size() < out.expected) {
    out.resume = pos;  // an incomplete command goes on from this argument's header
    if (pos >= buf.size()) return;
    if (buf[pos] != '$') {
      throw ProtocolError(std::string("expected '$', got '") + buf[pos] + "'");
    }
    const std::size_t end = line_end(buf, pos + 1, kMaxHeader);
    if (end == std::string_view::npos) return;
    const std::int64_t len = parse_length(buf, pos + 1, end, "bulk length");
    if (len < 0 || static_cast<std::uint64_t>(len) > limits.max_bulk) {
      throw ProtocolError("invalid bulk length");
    }
    const std::size_t data = end + 2;
    const auto ulen = static_cast<std::size_t>(len);
    if (buf.size() - data < ulen + 2) {  // the argument is not all here yet
      out.needed = data + ulen + 2;
      return;
    }
    if (buf[data + ulen] != '\r' || buf[data + ulen + 1] != '\n') {
      throw ProtocolError("bulk string not terminated by CRLF");
    }
    out.spans.emplace_back(data, ulen);
    pos = data + ulen + 2;
  }
  out.complete = true;
  out.consumed = pos;
  out.resume = 0;
  assign_args(out, out.spans.size(), [&](std::size_t i) {
    return std::string_view(buf.data() + out.spans[i].first, out.spans[i].second);
  });
}

}  // namespace

std::size_t Parsed::storage() const noexcept {
  std::size_t bytes = args.capacity() * sizeof(std::string) + spans.capacity() * sizeof(spans[0]);
  for (const std::string& a : args) bytes += a.capacity();
  return bytes;
}

Parsed parse_command(std::span<const char> buf, const Limits& limits) {
  Parsed p;
  parse_command(buf, limits, p);
  return p;
}

void parse_command(std::span<const char> buf, const Limits& limits, Parsed& out) {
  out.complete = false;
  out.consumed = 0;
  out.needed = 0;
  if (buf.empty()) return;
  try {
    if (buf[0] == '*') {
      parse_array(buf, limits, out);
    } else {
      parse_inline(buf, limits, out);
    }
  } catch (const ProtocolError&) {
    out.resume = 0;  // whatever `out` parses next starts afresh
    throw;
  }
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
