// mini-redis's active expiry (Keyspace::purge_expired): it erases the expired keys nobody
// touches again, and visits only the keys given an expiry time, dropping those deleted or
// stored again without one. Times are passed in, so no test waits for a clock.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "commands.hpp"
#include "keyspace.hpp"

namespace {

using mini_redis::Command;
using mini_redis::Keyspace;

// Runs one command on `keys`: its reply.
std::string run(Keyspace& keys, Command args) {
  std::string out;
  EXPECT_TRUE(mini_redis::run_keyspace_command(keys, mini_redis::lowercase(args[0]), args, out));
  return out;
}

// A time after every expiry the tests set (their longest is 100 s).
std::int64_t later() { return mini_redis::now_ms() + 1'000'000; }

TEST(KeyspacePurge, ErasesExpiredKeysAndVisitsOnlyThoseWithAnExpiryTime) {
  Keyspace keys(4);
  const std::int64_t before = mini_redis::now_ms();  // before every expiry time set below
  for (int i = 0; i < 1000; ++i) run(keys, {"SET", "plain" + std::to_string(i), "v"});
  for (int i = 0; i < 10; ++i) run(keys, {"SET", "short" + std::to_string(i), "v", "PX", "100"});
  run(keys, {"SET", "expired-later", "v"});
  run(keys, {"EXPIRE", "expired-later", "100"});
  EXPECT_EQ(keys.volatile_count(), 11u);      // what a purge visits: not the 1000 others
  EXPECT_EQ(keys.purge_expired(before), 0u);  // none due yet
  EXPECT_EQ(keys.purge_expired(later()), 11u);
  EXPECT_EQ(keys.volatile_count(), 0u);
  EXPECT_EQ(run(keys, {"EXISTS", "plain0", "plain999", "short0", "expired-later"}), ":2\r\n");
}

TEST(KeyspacePurge, AKeyDeletedOrStoredAgainWithoutExpiryIsDroppedNotErased) {
  Keyspace keys(2);
  const std::int64_t before = mini_redis::now_ms();
  run(keys, {"SET", "deleted", "v", "EX", "100"});
  run(keys, {"SET", "persisted", "v", "EX", "100"});
  run(keys, {"SET", "msetted", "v", "EX", "100"});
  run(keys, {"SET", "kept", "v", "EX", "100"});
  run(keys, {"DEL", "deleted"});
  run(keys, {"SET", "persisted", "w"});  // no EX: the key no longer expires
  run(keys, {"MSET", "msetted", "w"});
  run(keys, {"SET", "kept", "w", "KEEPTTL"});
  EXPECT_EQ(keys.volatile_count(), 4u);
  EXPECT_EQ(keys.purge_expired(before), 0u);  // `kept` is not due yet
  EXPECT_EQ(keys.volatile_count(), 1u);       // only `kept` is left
  EXPECT_EQ(keys.purge_expired(later()), 1u);
  EXPECT_EQ(run(keys, {"EXISTS", "persisted", "msetted", "kept"}), ":2\r\n");
}

}  // namespace
