// mini-redis's commands on the keyspace (GET, SET, LPUSH, ZADD...), and the replies every
// command shares (wrong arity, unknown command), worded byte for byte as redis-server 7.0
// words them. The commands that act on a connection (SUBSCRIBE, PUBLISH, QUIT) are the
// connection's (connection.cpp).
#pragma once

#include <string>
#include <string_view>

#include "keyspace.hpp"
#include "resp.hpp"

namespace mini_redis {

/// Runs the keyspace command `args` (args[0] is its name, in any case) and appends its reply
/// to `out`: ping, echo, config, get, set, del, exists, incr, expire, ttl, mset, lpush, rpush,
/// lpop, rpop, lrange, sadd, spop, hset, zadd, zpopmin. False (and nothing appended) when
/// `name` is none of them. `name` is args[0] in lower case.
bool run_keyspace_command(Keyspace& keys, std::string_view name, const Command& args,
                          std::string& out);

/// True when `name` (in lower case) is one of run_keyspace_command's commands and `argc`
/// arguments (its name included) are a number it takes.
bool keyspace_command_takes(std::string_view name, std::size_t argc) noexcept;

/// True when a command of `arity` takes `argc` arguments (its name included): redis's
/// convention, `arity` exact when positive, a minimum when negative.
bool arity_allows(int arity, std::size_t argc) noexcept;

/// "-ERR wrong number of arguments for '<name>' command".
void write_wrong_arity(std::string& out, std::string_view name);

/// "-ERR unknown command '<name>', with args beginning with: '<arg>' ...", as redis-server 7
/// words it (the connection stays open).
void write_unknown_command(std::string& out, const Command& args);

/// `s` in lower case (ASCII).
std::string lowercase(std::string_view s);

}  // namespace mini_redis
