// What the keyspace commands share (commands.cpp, collection_commands.cpp): argument
// parsing with redis-server's error replies, and the handlers' signature.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "keyspace.hpp"
#include "resp.hpp"

namespace mini_redis::detail {

/// A keyspace command: appends its reply to `out`. The arity was checked before.
using Handler = void (*)(Keyspace& keys, const Command& args, std::string& out);

/// The reply to a command on a key of another type.
inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
/// The reply to an argument that should be an integer.
inline constexpr std::string_view kNotInteger = "ERR value is not an integer or out of range";

/// `s` as a 64-bit integer, written as redis-server accepts one (decimal, optional '-', no
/// spaces, no '+'); nullopt otherwise.
std::optional<std::int64_t> parse_int(std::string_view s) noexcept;

/// `s` as a sorted-set score ("1.5", "-3", "inf", "+inf", "-inf"); nullopt for what
/// redis-server refuses (not a number, NaN, out of the range of a double).
std::optional<double> parse_score(std::string_view s) noexcept;

/// A score as redis-server 7.0 writes it: "%.17g", "inf", "-inf".
void write_score(std::string& out, double score);

/// The conditions of EXPIRE and ZADD (NX, XX, GT, LT) and ZADD's CH.
struct UpdateFlags {
  bool nx = false, xx = false, gt = false, lt = false, ch = false;
  /// Sets the flag `opt` (in lower case) names, CH only when `with_ch`: false (nothing set)
  /// when it names none.
  bool take(std::string_view opt, bool with_ch) noexcept;
};

/// The optional count of LPOP, RPOP, SPOP, ZPOPMIN at args[2]: -1 when absent, the count
/// when valid, nullopt after appending the error reply.
std::optional<std::int64_t> parse_count(const Command& args, std::string& out);

/// The value of `key` in `shard` if it holds a `T`, nullptr if the key does not exist;
/// nullopt (after appending WRONGTYPE to `out`) when it holds another type.
template <class T>
std::optional<T*> typed(Shard& shard, const std::string& key, std::string& out) {
  Entry* e = live(shard, key);
  if (e == nullptr) return static_cast<T*>(nullptr);
  if (T* v = std::get_if<T>(&e->value)) return v;
  write_error(out, kWrongType);
  return std::nullopt;
}

// The collection commands (collection_commands.cpp).
void lpush(Keyspace& keys, const Command& args, std::string& out);
void rpush(Keyspace& keys, const Command& args, std::string& out);
void lpop(Keyspace& keys, const Command& args, std::string& out);
void rpop(Keyspace& keys, const Command& args, std::string& out);
void lrange(Keyspace& keys, const Command& args, std::string& out);
void sadd(Keyspace& keys, const Command& args, std::string& out);
void spop(Keyspace& keys, const Command& args, std::string& out);
void hset(Keyspace& keys, const Command& args, std::string& out);
void zadd(Keyspace& keys, const Command& args, std::string& out);
void zpopmin(Keyspace& keys, const Command& args, std::string& out);

}  // namespace mini_redis::detail
