// spool::DelayQueue on the paused clock: 10^5 values inserted, reset, removed and more
// inserted at random (seeded, into reused slots), before and while draining, each coming out once,
// at its last deadline, earliest first; an insert earlier than the awaited deadline wakes the
// waiter on time; equal deadlines in the order set; the empty queue's nullopt; stale keys and Key{}
// refused; a value whose move throws leaves the queue as it was, in insert and in remove.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "spool/spool.hpp"
#include "support/time_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using spool::DelayQueue;
using spool::Instant;
using spool::Task;
using spool_time_test::paused_runtime;

// Reads `n` expired values (all if n is 0) and checks each against `model` (value ->
// deadline), which it updates: each once, at its last deadline (its tick: within 1 ms after
// it), the earliest first.
Task<void> drain(DelayQueue<int>& q, std::map<int, Instant>& model, std::size_t n) {
  Instant last{};
  for (std::size_t i = 0; n == 0 || i < n; ++i) {
    auto e = co_await spool::next(q);
    if (!e) break;
    const auto it = model.find(e->value);
    if (it == model.end()) {
      ADD_FAILURE() << "value " << e->value << " came out twice, or after its removal";
      co_return;
    }
    EXPECT_EQ(e->deadline, it->second);
    const Instant now = spool::time::now();
    EXPECT_LE(e->deadline, now);
    EXPECT_LE(now, e->deadline + 1ms);
    EXPECT_LE(last, e->deadline);
    EXPECT_FALSE(q.contains(e->key));
    last = e->deadline;
    model.erase(it);
  }
}

// `ops` random resets (half), removes (a third) and inserts of new values (a sixth, which
// reuse the slots removes and expiries freed), and stale-key checks: a key whose value is
// gone is refused even once its slot holds another value.
void shuffle(DelayQueue<int>& q, std::vector<DelayQueue<int>::Key>& keys,
             std::map<int, Instant>& model, std::mt19937& rng, int ops) {
  const Instant now = spool::time::now();
  for (int i = 0; i < ops; ++i) {
    const int v = static_cast<int>(rng() % keys.size());
    const auto key = keys[static_cast<std::size_t>(v)];
    const unsigned what = rng() % 6;
    const Instant d = now + std::chrono::microseconds(rng() % 10'000'000);
    if (what == 5) {
      const int fresh = static_cast<int>(keys.size());
      keys.push_back(q.insert_at(fresh, d));
      model[fresh] = d;
    } else if (!q.contains(key)) {
      EXPECT_EQ(model.count(v), 0u);
      EXPECT_THROW(q.remove(key), std::invalid_argument);
    } else if (what < 3) {
      q.reset_at(key, d);
      model[v] = d;
    } else {
      EXPECT_EQ(q.remove(key), v);
      model.erase(v);
    }
  }
}

// Keys that name no value though their slot holds one (its generation moved on).
std::size_t stale_keys_in_reused_slots(const DelayQueue<int>& q,
                                       const std::vector<DelayQueue<int>::Key>& keys) {
  std::set<std::uint32_t> live_slots;
  for (const auto& k : keys) {
    if (q.contains(k)) live_slots.insert(k.slot);
  }
  std::size_t n = 0;
  for (const auto& k : keys) n += !q.contains(k) && live_slots.count(k.slot) > 0;
  return n;
}

TEST(DelayQueue, TenToTheFiveValuesResetAndRemovedAtRandomComeOutOnceInOrder) {
  auto rt = paused_runtime();
  rt.block_on([]() -> Task<void> {
    std::mt19937 rng(19);
    DelayQueue<int> q;
    std::map<int, Instant> model;
    std::vector<DelayQueue<int>::Key> keys;
    const Instant start = spool::time::now();
    for (int v = 0; v < 100'000; ++v) {
      const Instant d = start + std::chrono::microseconds(rng() % 10'000'000);
      keys.push_back(q.insert_at(v, d));
      model[v] = d;
    }
    shuffle(q, keys, model, rng, 100'000);
    EXPECT_EQ(q.size(), model.size());
    co_await drain(q, model, model.size() / 2);
    const std::size_t stale_before = stale_keys_in_reused_slots(q, keys);
    shuffle(q, keys, model, rng, 100'000);  // while half of it waits
    EXPECT_EQ(q.size(), model.size());
    // The inserts reused freed slots, so stale keys now share slots with live values.
    EXPECT_GT(stale_keys_in_reused_slots(q, keys), stale_before);
    co_await drain(q, model, 0);
    EXPECT_TRUE(model.empty());
    EXPECT_TRUE(q.empty());
  }());
}

TEST(DelayQueue, AnInsertEarlierThanTheAwaitedDeadlineWakesTheWaiterThen) {
  auto rt = paused_runtime();
  rt.block_on([]() -> Task<void> {
    DelayQueue<std::string> q;
    const Instant start = spool::time::now();
    q.insert_at("late", start + 10s);
    auto inserter = spool::spawn([](DelayQueue<std::string>& q, Instant start) -> Task<void> {
      co_await spool::sleep_until(start + 1s);  // the consumer waits for +10 s by then
      q.insert_at("early", start + 2s);
    }(q, start));
    auto first = co_await spool::next(q);
    EXPECT_EQ(first->value, "early");
    EXPECT_EQ(spool::time::now(), start + 2s);
    EXPECT_EQ((co_await spool::next(q))->value, "late");
    EXPECT_EQ(spool::time::now(), start + 10s);
    co_await inserter;
  }());
}

TEST(DelayQueue, EqualDeadlinesComeOutInTheOrderTheyWereSet) {
  auto rt = paused_runtime();
  rt.block_on([]() -> Task<void> {
    DelayQueue<int> q;
    const Instant d = spool::time::now() + 5ms;
    const auto k0 = q.insert_at(0, d);
    q.insert_at(1, d);
    q.insert_at(2, d);
    q.reset_at(k0, d);  // set again: now the last
    std::vector<int> order;
    while (auto e = co_await spool::next(q)) order.push_back(e->value);
    EXPECT_EQ(order, (std::vector<int>{1, 2, 0}));
  }());
}

TEST(DelayQueue, EmptyItGivesNulloptAndValuesInsertedLaterComeOut) {
  auto rt = paused_runtime();
  rt.block_on([]() -> Task<void> {
    DelayQueue<int> q;
    EXPECT_EQ(co_await spool::next(q), std::nullopt);
    q.insert(7, 3ms);
    EXPECT_EQ((co_await spool::next(q))->value, 7);
    EXPECT_EQ(co_await spool::next(q), std::nullopt);
  }());
}

TEST(DelayQueue, AStaleKeyIsRefusedWithAMessage) {
  auto rt = paused_runtime();
  rt.block_on([]() -> Task<void> {
    DelayQueue<int> q;
    const auto k = q.insert(1, 1ms);
    EXPECT_EQ(q.remove(k), 1);
    const auto reused = q.insert(2, 1ms);  // the same slot, another generation
    EXPECT_EQ(reused.slot, k.slot);
    try {
      q.reset(k, 1s);
      ADD_FAILURE() << "a stale key was reset";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("expired or was removed"), std::string::npos);
    }
    EXPECT_EQ((co_await spool::next(q))->value, 2);
  }());
}

TEST(DelayQueue, ADefaultKeyNamesNoValue) {
  auto rt = paused_runtime();
  rt.block_on([]() -> Task<void> {
    DelayQueue<int> q;
    EXPECT_EQ(q.insert(1, 1ms).slot, 0u);
    EXPECT_FALSE(q.contains(DelayQueue<int>::Key{}));
    EXPECT_THROW(q.remove(DelayQueue<int>::Key{}), std::invalid_argument);
    EXPECT_EQ(q.size(), 1u);
    co_return;
  }());
}

// A value whose move throws while `fail` is set.
struct Brittle {
  static inline bool fail = false;
  int id;
  explicit Brittle(int i) : id(i) {}
  Brittle(Brittle&& other) : id(other.id) {
    if (fail) throw std::runtime_error("Brittle moved");
  }
  Brittle& operator=(Brittle&&) = delete;
};

// No slot is lost: the next insert takes the slot the failed one would have (a fresh slot,
// then a freed one), and the queue holds what it held.
TEST(DelayQueue, AnInsertWhoseValueThrowsLeavesTheQueueAsItWas) {
  DelayQueue<Brittle> q;
  const Instant d{};
  Brittle::fail = true;
  EXPECT_THROW(q.insert_at(Brittle(0), d), std::runtime_error);
  Brittle::fail = false;
  EXPECT_TRUE(q.empty());
  const auto k0 = q.insert_at(Brittle(0), d);
  EXPECT_EQ(k0.slot, 0u);  // not 1: the failed insert kept no slot
  const auto k1 = q.insert_at(Brittle(1), d);
  EXPECT_EQ(q.remove(k0).id, 0);
  Brittle::fail = true;
  EXPECT_THROW(q.insert_at(Brittle(2), d), std::runtime_error);
  Brittle::fail = false;
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.insert_at(Brittle(2), d).slot, k0.slot);  // the freed slot is still free
  EXPECT_EQ(q.remove(k1).id, 1);
}

TEST(DelayQueue, ARemoveWhoseValueThrowsLeavesTheValueIn) {
  DelayQueue<Brittle> q;
  const auto k = q.insert_at(Brittle(7), Instant{});
  Brittle::fail = true;
  EXPECT_THROW(q.remove(k), std::runtime_error);
  Brittle::fail = false;
  EXPECT_TRUE(q.contains(k));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.remove(k).id, 7);
  EXPECT_TRUE(q.empty());
}

}  // namespace
