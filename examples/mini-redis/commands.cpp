#include "commands.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "command_support.hpp"

namespace mini_redis {

namespace detail {

std::optional<std::int64_t> parse_int(std::string_view s) noexcept {
  // No leading zero and no "-0", as redis-server's string2ll ("0" itself is fine).
  const std::string_view digits = !s.empty() && s.front() == '-' ? s.substr(1) : s;
  if (s != "0" && (digits.empty() || digits.front() < '1' || digits.front() > '9')) {
    return std::nullopt;
  }
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_score(std::string_view s) noexcept {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);  // from_chars takes no '+'
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || std::isnan(v)) {
    return std::nullopt;
  }
  return v;
}

void write_score(std::string& out, double score) {
  if (std::isinf(score)) {
    write_bulk(out, score > 0 ? "inf" : "-inf");
    return;
  }
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%.17g", score);
  write_bulk(out, std::string_view(buf, static_cast<std::size_t>(n)));
}

bool UpdateFlags::take(std::string_view opt, bool with_ch) noexcept {
  bool* flag = opt == "nx"              ? &nx
               : opt == "xx"            ? &xx
               : opt == "gt"            ? &gt
               : opt == "lt"            ? &lt
               : opt == "ch" && with_ch ? &ch
                                        : nullptr;
  if (flag != nullptr) *flag = true;
  return flag != nullptr;
}

std::optional<std::int64_t> parse_count(const Command& args, std::string& out) {
  if (args.size() < 3) return -1;
  const auto count = parse_int(args[2]);
  if (!count || *count < 0) {
    write_error(out, "ERR value is out of range, must be positive");
    return std::nullopt;
  }
  return *count;
}

}  // namespace detail

namespace {

using detail::kNotInteger;
using detail::kWrongType;
using detail::parse_int;

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMinInt = std::numeric_limits<std::int64_t>::min();

void ping(Keyspace&, const Command& args, std::string& out) {
  if (args.size() == 1) {
    write_simple(out, "PONG");
  } else {
    write_bulk(out, args[1]);
  }
}

void echo(Keyspace&, const Command& args, std::string& out) { write_bulk(out, args[1]); }

// CONFIG GET answers as redis-server does for parameters it does not know (an empty list):
// mini-redis has no configuration parameters to show. redis-benchmark asks for "save" and
// "appendonly" when it starts, and copes with the empty answer.
void config(Keyspace&, const Command& args, std::string& out) {
  const std::string sub = lowercase(args[1]);
  if (sub != "get") {
    write_error(out, "ERR unknown subcommand '" + args[1] + "'. Try CONFIG HELP.");
  } else if (args.size() < 3) {
    write_wrong_arity(out, "config|get");
  } else {
    write_array_header(out, 0);
  }
}

void get(Keyspace& keys, const Command& args, std::string& out) {
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  const auto v = detail::typed<std::string>(shard, args[1], out);
  if (!v) return;
  if (*v == nullptr) {
    write_null(out);
  } else {
    write_bulk(out, **v);
  }
}

// SET key value [EX seconds | PX milliseconds | KEEPTTL] [NX | XX]. As in redis-server, a
// repeated EX (or PX) takes the last value; EX with PX, or either with KEEPTTL, is an error.
void set(Keyspace& keys, const Command& args, std::string& out) {
  bool nx = false, xx = false, keep_ttl = false;
  const std::string* expire_arg = nullptr;
  std::int64_t unit_ms = 0;  // 1000 after EX, 1 after PX
  for (std::size_t i = 3; i < args.size(); ++i) {
    const std::string opt = lowercase(args[i]);
    const bool has_next = i + 1 < args.size();
    const std::int64_t unit = opt == "ex" ? 1000 : opt == "px" ? 1 : 0;
    if (opt == "nx" && !xx) {
      nx = true;
    } else if (opt == "xx" && !nx) {
      xx = true;
    } else if (opt == "keepttl" && expire_arg == nullptr) {
      keep_ttl = true;
    } else if (unit != 0 && (unit_ms == 0 || unit_ms == unit) && !keep_ttl && has_next) {
      unit_ms = unit;
      expire_arg = &args[++i];
    } else {
      write_error(out, "ERR syntax error");
      return;
    }
  }
  std::int64_t expires_at = 0;
  if (expire_arg != nullptr) {
    const auto n = parse_int(*expire_arg);
    if (!n) {
      write_error(out, kNotInteger);
      return;
    }
    const std::int64_t now = now_ms();
    if (*n <= 0 || *n > kMaxInt / unit_ms || *n * unit_ms > kMaxInt - now) {
      write_error(out, "ERR invalid expire time in 'set' command");
      return;
    }
    expires_at = now + *n * unit_ms;
  }
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  Entry* e = live(shard, args[1]);
  if ((nx && e != nullptr) || (xx && e == nullptr)) {
    write_null(out);
    return;
  }
  if (e == nullptr) {
    e = &shard.keys.emplace(args[1], Entry{args[2], 0}).first->second;
    shard.set_expiry(args[1], *e, expires_at);
  } else {
    e->value = args[2];
    if (!keep_ttl) shard.set_expiry(args[1], *e, expires_at);
  }
  write_simple(out, "OK");
}

// DEL and EXISTS: how many of the keys exist (counting a key named twice twice), erasing
// them for DEL.
template <bool kErase>
void count_keys(Keyspace& keys, const Command& args, std::string& out) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < args.size(); ++i) {
    Shard& shard = keys.shard_of(args[i]);
    std::lock_guard lock(shard.mutex);
    if (live(shard, args[i]) == nullptr) continue;
    ++n;
    if constexpr (kErase) shard.keys.erase(args[i]);
  }
  write_integer(out, n);
}

void incr(Keyspace& keys, const Command& args, std::string& out) {
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  const auto v = detail::typed<std::string>(shard, args[1], out);
  if (!v) return;
  std::int64_t n = 0;
  if (*v != nullptr) {
    const auto old = parse_int(**v);
    if (!old) {
      write_error(out, kNotInteger);
      return;
    }
    if (*old == std::numeric_limits<std::int64_t>::max()) {
      write_error(out, "ERR increment or decrement would overflow");
      return;
    }
    n = *old;
  }
  ++n;
  if (*v == nullptr) {
    shard.keys.emplace(args[1], Entry{std::to_string(n), {}});
  } else {
    **v = std::to_string(n);  // the key keeps its expiry time
  }
  write_integer(out, n);
}

// EXPIRE key seconds [NX | XX | GT | LT]: 1 when the expiry time was set (a time not in
// the future deletes the key), 0 when the key does not exist or the option said no. A key
// without an expiry time counts as expiring never (for GT and LT), as in redis-server.
void expire(Keyspace& keys, const Command& args, std::string& out) {
  detail::UpdateFlags f;
  for (std::size_t i = 3; i < args.size(); ++i) {
    if (!f.take(lowercase(args[i]), false)) {
      write_error(out, "ERR Unsupported option " + args[i]);
      return;
    }
  }
  const bool nx = f.nx, xx = f.xx, gt = f.gt, lt = f.lt;
  if (nx && (xx || gt || lt)) {
    write_error(out, "ERR NX and XX, GT or LT options at the same time are not compatible");
    return;
  }
  if (gt && lt) {
    write_error(out, "ERR GT and LT options at the same time are not compatible");
    return;
  }
  const auto seconds = parse_int(args[2]);
  if (!seconds) {
    write_error(out, kNotInteger);
    return;
  }
  const std::int64_t now = now_ms();
  if (*seconds > kMaxInt / 1000 || *seconds < kMinInt / 1000 || *seconds * 1000 > kMaxInt - now) {
    write_error(out, "ERR invalid expire time in 'expire' command");
    return;
  }
  const std::int64_t when = now + *seconds * 1000;
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  Entry* e = live(shard, args[1]);
  if (e == nullptr) {
    write_integer(out, 0);
    return;
  }
  const bool refused = (nx && e->has_ttl()) || (xx && !e->has_ttl()) ||
                       (gt && (!e->has_ttl() || when <= e->expires_at_ms)) ||
                       (lt && e->has_ttl() && when >= e->expires_at_ms);
  if (refused) {
    write_integer(out, 0);
    return;
  }
  if (when <= now) {
    shard.keys.erase(args[1]);
  } else {
    shard.set_expiry(args[1], *e, when);
  }
  write_integer(out, 1);
}

// TTL key: seconds left (rounded), -1 without an expiry time, -2 without the key.
void ttl(Keyspace& keys, const Command& args, std::string& out) {
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  const Entry* e = live(shard, args[1]);
  if (e == nullptr) {
    write_integer(out, -2);
  } else if (!e->has_ttl()) {
    write_integer(out, -1);
  } else {
    write_integer(out, (e->expires_at_ms - now_ms() + 500) / 1000);
  }
}

void mset(Keyspace& keys, const Command& args, std::string& out) {
  if (args.size() % 2 == 0) {
    write_wrong_arity(out, "mset");
    return;
  }
  for (std::size_t i = 1; i < args.size(); i += 2) {
    Shard& shard = keys.shard_of(args[i]);
    std::lock_guard lock(shard.mutex);
    shard.keys.insert_or_assign(args[i], Entry{args[i + 1], {}});
  }
  write_simple(out, "OK");
}

// A command's arity (redis's convention: see arity_allows) and its handler.
struct Spec {
  int arity;
  int max_args;  // 0: no maximum beyond the arity
  detail::Handler run;
};

const std::unordered_map<std::string_view, Spec>& table() {
  static const std::unordered_map<std::string_view, Spec> commands = {
      {"ping", {-1, 2, ping}},
      {"echo", {2, 0, echo}},
      {"config", {-2, 0, config}},
      {"get", {2, 0, get}},
      {"set", {-3, 0, set}},
      {"del", {-2, 0, count_keys<true>}},
      {"exists", {-2, 0, count_keys<false>}},
      {"incr", {2, 0, incr}},
      {"expire", {-3, 0, expire}},
      {"ttl", {2, 0, ttl}},
      {"mset", {-3, 0, mset}},
      {"lpush", {-3, 0, detail::lpush}},
      {"rpush", {-3, 0, detail::rpush}},
      {"lpop", {-2, 3, detail::lpop}},
      {"rpop", {-2, 3, detail::rpop}},
      {"lrange", {4, 0, detail::lrange}},
      {"sadd", {-3, 0, detail::sadd}},
      {"spop", {-2, 3, detail::spop}},
      {"hset", {-4, 0, detail::hset}},
      {"zadd", {-4, 0, detail::zadd}},
      {"zpopmin", {-2, 3, detail::zpopmin}},
  };
  return commands;
}

bool takes(const Spec& spec, std::size_t argc) noexcept {
  return arity_allows(spec.arity, argc) &&
         (spec.max_args == 0 || argc <= static_cast<std::size_t>(spec.max_args));
}

}  // namespace

bool run_keyspace_command(Keyspace& keys, std::string_view name, const Command& args,
                          std::string& out) {
  const auto& commands = table();
  const auto it = commands.find(name);
  if (it == commands.end()) return false;
  const Spec& spec = it->second;
  if (!takes(spec, args.size())) {
    write_wrong_arity(out, name);
  } else {
    spec.run(keys, args, out);
  }
  return true;
}

bool keyspace_command_takes(std::string_view name, std::size_t argc) noexcept {
  const auto it = table().find(name);
  return it != table().end() && takes(it->second, argc);
}

bool arity_allows(int arity, std::size_t argc) noexcept {
  return arity > 0 ? argc == static_cast<std::size_t>(arity)
                   : argc >= static_cast<std::size_t>(-arity);
}

void write_wrong_arity(std::string& out, std::string_view name) {
  std::string msg = "ERR wrong number of arguments for '";
  msg += name;
  msg += "' command";
  write_error(out, msg);
}

void write_unknown_command(std::string& out, const Command& args) {
  // As redis-server 7.0: the name cut at 128 bytes; the arguments quoted one by one while
  // their list is shorter than 128 bytes, each cut to what is left of those 128 (write_error
  // makes '\r' and '\n' spaces).
  std::string list;
  for (std::size_t i = 1; i < args.size() && list.size() < 128; ++i) {
    list += "'" + args[i].substr(0, 128 - list.size()) + "' ";
  }
  std::string msg =
      "ERR unknown command '" + args[0].substr(0, 128) + "', with args beginning with: " + list;
  std::replace_if(
      msg.begin(), msg.end(), [](char c) { return c == '\r' || c == '\n'; }, ' ');
  write_error(out, msg);
}

std::string lowercase(std::string_view s) {
  std::string r(s);
  for (char& c : r) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return r;
}

}  // namespace mini_redis
