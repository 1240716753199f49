#include "keyspace.hpp"

#include <algorithm>

namespace mini_redis {

Keyspace::Keyspace(std::size_t shards) : shards_(std::max<std::size_t>(shards, 1)) {}

std::size_t Keyspace::purge_expired(std::int64_t now) {
  std::size_t erased = 0;
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    std::erase_if(shard.volatile_keys, [&](const std::string& key) {
      const auto it = shard.keys.find(key);
      if (it == shard.keys.end() || !it->second.has_ttl()) return true;  // gone, or persisted
      if (!it->second.expired(now)) return false;
      shard.keys.erase(it);
      ++erased;
      return true;
    });
  }
  return erased;
}

std::size_t Keyspace::volatile_count() {
  std::size_t n = 0;
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    n += shard.volatile_keys.size();
  }
  return n;
}

Entry* live(Shard& shard, const std::string& key) {
  const auto it = shard.keys.find(key);
  if (it == shard.keys.end()) return nullptr;
  if (it->second.has_ttl() && it->second.expired(now_ms())) {
    shard.keys.erase(it);
    return nullptr;
  }
  return &it->second;
}

}  // namespace mini_redis
