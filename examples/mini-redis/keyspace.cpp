#include "keyspace.hpp"

#include <algorithm>

namespace mini_redis {

Keyspace::Keyspace(std::size_t shards) : shards_(std::max<std::size_t>(shards, 1)) {}

std::size_t Keyspace::purge_expired(std::int64_t now) {
  std::size_t erased = 0;
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mutex);
    erased += std::erase_if(shard.keys, [now](const auto& kv) { return kv.second.expired(now); });
  }
  return erased;
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
