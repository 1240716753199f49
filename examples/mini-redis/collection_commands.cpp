// The list, set, hash and sorted-set commands of redis-benchmark's default run: LPUSH, RPUSH,
// LPOP, RPOP, LRANGE, SADD, SPOP, HSET, ZADD, ZPOPMIN. A collection emptied by a pop goes
// away with its key, as in redis-server.
#include <algorithm>
#include <vector>

#include "command_support.hpp"
#include "commands.hpp"

namespace mini_redis::detail {

namespace {

// The collection of type T at args[1], made empty when the key does not exist; nullptr
// after appending WRONGTYPE.
template <class T>
T* typed_or_new(Shard& shard, const std::string& key, std::string& out) {
  const auto v = typed<T>(shard, key, out);
  if (!v) return nullptr;
  if (*v != nullptr) return *v;
  return &std::get<T>(shard.keys.insert_or_assign(key, Entry{T{}, {}}).first->second.value);
}

// Erases `key` once its collection is empty.
template <class T>
void erase_if_empty(Shard& shard, const std::string& key, const T& collection) {
  if (collection.empty()) shard.keys.erase(key);
}

// The reply of a pop: the value alone when no count was given (count < 0), else an array
// of up to `count` of the `available` values. `take_one` writes one value and removes it.
template <class TakeOne>
void write_popped(std::string& out, std::int64_t count, std::size_t available, TakeOne take_one) {
  if (count < 0) {
    take_one();
    return;
  }
  const auto n = std::min(static_cast<std::size_t>(count), available);
  write_array_header(out, n);
  for (std::size_t i = 0; i < n; ++i) take_one();
}

template <bool kFront>
void push(Keyspace& keys, const Command& args, std::string& out) {
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  List* list = typed_or_new<List>(shard, args[1], out);
  if (list == nullptr) return;
  for (std::size_t i = 2; i < args.size(); ++i) {
    if constexpr (kFront) {
      list->push_front(args[i]);
    } else {
      list->push_back(args[i]);
    }
  }
  write_integer(out, static_cast<std::int64_t>(list->size()));
}

// LPOP, RPOP, SPOP key [count]: the collection of type T at the key loses values to
// `take(collection)`, which writes one and removes it. A missing key gets nil, or with a
// count a nil array (lists) or an empty one (sets), as redis-server answers.
template <class T, class Take>
void pop_from(Keyspace& keys, const Command& args, std::string& out, bool nil_array, Take take) {
  const auto count = parse_count(args, out);
  if (!count) return;
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  const auto v = typed<T>(shard, args[1], out);
  if (!v) return;
  T* collection = *v;
  if (collection == nullptr) {
    if (*count < 0) {
      write_null(out);
    } else if (nil_array) {
      write_null_array(out);
    } else {
      write_array_header(out, 0);
    }
    return;
  }
  write_popped(out, *count, collection->size(), [&] { take(*collection); });
  erase_if_empty(shard, args[1], *collection);
}

template <bool kFront>
void pop(Keyspace& keys, const Command& args, std::string& out) {
  pop_from<List>(keys, args, out, true, [&out](List& list) {
    if constexpr (kFront) {
      write_bulk(out, list.front());
      list.pop_front();
    } else {
      write_bulk(out, list.back());
      list.pop_back();
    }
  });
}

}  // namespace

void lpush(Keyspace& keys, const Command& args, std::string& out) { push<true>(keys, args, out); }
void rpush(Keyspace& keys, const Command& args, std::string& out) { push<false>(keys, args, out); }
void lpop(Keyspace& keys, const Command& args, std::string& out) { pop<true>(keys, args, out); }
void rpop(Keyspace& keys, const Command& args, std::string& out) { pop<false>(keys, args, out); }

// LRANGE key start stop: negative indexes count from the end; the range is clamped.
void lrange(Keyspace& keys, const Command& args, std::string& out) {
  const auto start = parse_int(args[2]);
  const auto stop = parse_int(args[3]);
  if (!start || !stop) {
    write_error(out, kNotInteger);
    return;
  }
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  const auto v = typed<List>(shard, args[1], out);
  if (!v) return;
  if (*v == nullptr) {
    write_array_header(out, 0);
    return;
  }
  const List& list = **v;
  const auto len = static_cast<std::int64_t>(list.size());
  std::int64_t first = *start < 0 ? std::max<std::int64_t>(len + *start, 0) : *start;
  std::int64_t last = *stop < 0 ? len + *stop : std::min(*stop, len - 1);
  if (first > last || first >= len) {
    write_array_header(out, 0);
    return;
  }
  write_array_header(out, static_cast<std::size_t>(last - first + 1));
  for (auto i = first; i <= last; ++i) write_bulk(out, list[static_cast<std::size_t>(i)]);
}

void sadd(Keyspace& keys, const Command& args, std::string& out) {
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  Set* set = typed_or_new<Set>(shard, args[1], out);
  if (set == nullptr) return;
  std::int64_t added = 0;
  for (std::size_t i = 2; i < args.size(); ++i) added += set->insert(args[i]).second ? 1 : 0;
  write_integer(out, added);
}

// SPOP key [count]: removes an arbitrary member (redis-server picks a random one).
void spop(Keyspace& keys, const Command& args, std::string& out) {
  pop_from<Set>(keys, args, out, false, [&out](Set& set) {
    const auto node = set.extract(set.begin());
    write_bulk(out, node.value());
  });
}

// HSET key field value [field value ...]: the count of new fields.
void hset(Keyspace& keys, const Command& args, std::string& out) {
  if (args.size() % 2 != 0) {
    write_wrong_arity(out, "hset");
    return;
  }
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  Hash* hash = typed_or_new<Hash>(shard, args[1], out);
  if (hash == nullptr) return;
  std::int64_t added = 0;
  for (std::size_t i = 2; i < args.size(); i += 2) {
    added += hash->insert_or_assign(args[i], args[i + 1]).second ? 1 : 0;
  }
  write_integer(out, added);
}

// ZADD key [NX|XX] [GT|LT] [CH] score member [score member ...]: the count of members added
// (with CH: added or whose score changed).
void zadd(Keyspace& keys, const Command& args, std::string& out) {
  UpdateFlags f;
  std::size_t i = 2;
  while (i < args.size() && f.take(lowercase(args[i]), true)) ++i;
  const auto [nx, xx, gt, lt, ch] = f;
  const std::size_t pairs_at = i;
  if (pairs_at == args.size() || (args.size() - pairs_at) % 2 != 0) {
    write_error(out, "ERR syntax error");
    return;
  }
  if (nx && xx) {
    write_error(out, "ERR XX and NX options at the same time are not compatible");
    return;
  }
  if ((gt && nx) || (lt && nx) || (gt && lt)) {
    write_error(out, "ERR GT, LT, and/or NX options at the same time are not compatible");
    return;
  }
  std::vector<double> scores;
  for (i = pairs_at; i < args.size(); i += 2) {
    const auto score = parse_score(args[i]);
    if (!score) {
      write_error(out, "ERR value is not a valid float");
      return;
    }
    scores.push_back(*score);
  }
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  const auto v = typed<ZSet>(shard, args[1], out);
  if (!v) return;
  if (*v == nullptr && xx) {
    write_integer(out, 0);
    return;
  }
  ZSet* zset = typed_or_new<ZSet>(shard, args[1], out);
  std::int64_t added = 0, changed = 0;
  for (i = pairs_at; i < args.size(); i += 2) {
    const double score = scores[(i - pairs_at) / 2];
    const std::string& member = args[i + 1];
    const auto it = zset->score_of.find(member);
    if (it == zset->score_of.end()) {
      if (xx) continue;
      zset->score_of.emplace(member, score);
      zset->by_score.emplace(score, member);
      ++added;
    } else {
      const double old = it->second;
      if (nx || old == score || (gt && score < old) || (lt && score > old)) continue;
      zset->by_score.erase({old, member});
      zset->by_score.emplace(score, member);
      it->second = score;
      ++changed;
    }
  }
  erase_if_empty(shard, args[1], zset->score_of);
  write_integer(out, ch ? added + changed : added);
}

// ZPOPMIN key [count]: the members with the lowest scores, each followed by its score.
void zpopmin(Keyspace& keys, const Command& args, std::string& out) {
  const auto count = parse_count(args, out);
  if (!count) return;
  Shard& shard = keys.shard_of(args[1]);
  std::lock_guard lock(shard.mutex);
  const auto v = typed<ZSet>(shard, args[1], out);
  if (!v) return;
  ZSet* zset = *v;
  if (zset == nullptr) {
    write_array_header(out, 0);
    return;
  }
  const auto n = std::min(static_cast<std::size_t>(*count < 0 ? 1 : *count), zset->by_score.size());
  write_array_header(out, 2 * n);
  for (std::size_t k = 0; k < n; ++k) {
    auto node = zset->by_score.extract(zset->by_score.begin());
    write_bulk(out, node.value().second);
    write_score(out, node.value().first);
    zset->score_of.erase(node.value().second);
  }
  erase_if_empty(shard, args[1], zset->score_of);
}

}  // namespace mini_redis::detail
