// mini-redis's keyspace: the keys and their values (strings, lists, sets, hashes, sorted
// sets) with their expiry, in shards that each have a lock, so that connections on
// different workers rarely wait for each other.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace mini_redis {

/// The clock of expiry times (TTL, EXPIRE, SET EX/PX).
using Clock = std::chrono::steady_clock;

/// Now on Clock, in milliseconds: expiry times are kept in milliseconds, as redis-server
/// keeps them, so that any time it accepts (up to 2^63 - 1 ms from now) fits.
inline std::int64_t now_ms() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch())
      .count();
}

/// A sorted set: members ordered by (score, member), and each member's score.
struct ZSet {
  std::set<std::pair<double, std::string>> by_score;  ///< the order ZPOPMIN pops in
  std::unordered_map<std::string, double> score_of;   ///< member -> score
};

using List = std::deque<std::string>;                       ///< LPUSH, RPUSH, LPOP, LRANGE...
using Set = std::unordered_set<std::string>;                ///< SADD, SPOP
using Hash = std::unordered_map<std::string, std::string>;  ///< HSET

/// A key's value: one of the five types the commands handle.
using Value = std::variant<std::string, List, Set, Hash, ZSet>;

/// A key's value and when it expires.
struct Entry {
  Value value;
  /// When the key expires, in now_ms() milliseconds; 0 (the default) means never.
  std::int64_t expires_at_ms = 0;
  /// True when the key has an expiry time.
  bool has_ttl() const noexcept { return expires_at_ms != 0; }
  /// True when the key has expired by `now` (now_ms()).
  bool expired(std::int64_t now) const noexcept { return has_ttl() && expires_at_ms <= now; }
};

/// One shard: a lock and the keys whose hash falls in it. Hold `mutex` for every access.
struct Shard {
  std::mutex mutex;                             ///< guards `keys` and `volatile_keys`
  std::unordered_map<std::string, Entry> keys;  ///< the shard's keys (expired ones linger
                                                ///< until touched: see live())
  /// The keys given an expiry time (redis-server's `expires` dict): the only ones the
  /// active expiry visits. Kept loosely: a key deleted, or stored again without one, stays
  /// here until the next purge drops it.
  std::unordered_set<std::string> volatile_keys;

  /// Sets `e`'s (the entry of `key`) expiry time to `when` (0: none), and tracks the key when
  /// it has one.
  void set_expiry(const std::string& key, Entry& e, std::int64_t when) {
    if (when != 0) volatile_keys.insert(key);
    e.expires_at_ms = when;
  }
};

/// The sharded keyspace. Thread-safe through the shards' locks; a command locks the shard of
/// each key it touches, one at a time (so a command on several keys, like MSET or DEL, is
/// not atomic across shards, as it is in redis-server).
class Keyspace {
 public:
  /// A keyspace of `shards` shards (at least 1).
  explicit Keyspace(std::size_t shards);

  /// The shard that holds `key`.
  Shard& shard_of(const std::string& key) noexcept {
    return shards_[std::hash<std::string>{}(key) % shards_.size()];
  }
  /// Erases every key that expired by `now`, one shard (one lock) at a time: the active
  /// half of expiry, for keys nobody touches again. It visits only the keys given an expiry
  /// time (Shard::volatile_keys), not the whole keyspace. The count erased.
  std::size_t purge_expired(std::int64_t now);
  /// The keys tracked as having an expiry time, over every shard (a purge leaves only those
  /// that have one and have not expired).
  std::size_t volatile_count();

 private:
  std::vector<Shard> shards_;
};

/// The entry of `key` in `shard` (whose lock the caller holds), or nullptr when there is
/// none or it has expired (an expired one is erased here: expiry is lazy, as the keys are
/// touched). The clock is read only for a key that has an expiry time.
Entry* live(Shard& shard, const std::string& key);

}  // namespace mini_redis
