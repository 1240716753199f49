// TimerWheel (src/driver/time/wheel.hpp), single-threaded. With ticks of one unit: each node
// fires exactly at its `when`, once, in order, on every level and beyond the wheel's span,
// however the polls step; remove, refusal of due deadlines, and next_expiration's bound.
// With longer ticks: the nodes of one tick fire together once the latest of their deadlines
// has passed, never before a deadline, never after their tick's end.
#include "driver/time/wheel.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace {

using spool::detail::TimerNode;
using spool::detail::TimerWheel;

constexpr std::uint64_t pow2(unsigned n) { return std::uint64_t{1} << n; }
constexpr std::uint64_t kSpan = pow2(36);   // 64^6 ticks
constexpr std::uint64_t kDay = 86'400'000;  // at 1 tick = 1 ms

// Polls to `now` and returns the nodes handed out, in order; each must be unlinked already.
std::vector<TimerNode*> poll(TimerWheel& wheel, std::uint64_t now) {
  std::vector<TimerNode*> fired;
  EXPECT_TRUE(wheel.poll(now, [&](TimerNode* node) {
    EXPECT_FALSE(node->linked);
    fired.push_back(node);
    return true;
  }));
  return fired;
}

// A log-uniform delta in [1, 2^max_bits]: deadlines on every level, and beyond the span.
std::uint64_t random_delta(std::mt19937_64& rng, unsigned max_bits) {
  return 1 + rng() % pow2(static_cast<unsigned>(rng() % (max_bits + 1)));
}

// Deltas from elapsed() around each level's slot width, and beyond the span.
const std::uint64_t kEdgeDeltas[] = {1,        63,           64,       65,           pow2(12) - 1,
                                     pow2(12), pow2(12) + 1, pow2(18), pow2(24) + 3, pow2(30) - 1,
                                     pow2(30), kSpan - 1,    kSpan,    kSpan + 1,    5 * kSpan + 7};

TEST(TimerWheel, EmptyWheelHasNoExpirationAndPollJustAdvances) {
  TimerWheel wheel;
  EXPECT_TRUE(wheel.empty());
  EXPECT_EQ(wheel.next_expiration(), std::nullopt);
  EXPECT_TRUE(poll(wheel, 1000 * kDay).empty());
  EXPECT_EQ(wheel.elapsed(), 1000 * kDay);
}

// From a start on a top-level slot's edge (deadlines on slot edges of every level) and from
// one that is not.
TEST(TimerWheel, NodeFiresExactlyAtItsTickNotOneBefore) {
  for (const std::uint64_t start : {5 * pow2(30), std::uint64_t{123'456'789}}) {
    for (const std::uint64_t delta : kEdgeDeltas) {
      SCOPED_TRACE(::testing::Message() << start << " + " << delta);
      for (const bool stepwise : {false, true}) {
        TimerWheel wheel;
        poll(wheel, start);
        TimerNode node;
        node.when = start + delta;
        ASSERT_TRUE(wheel.insert(&node));
        EXPECT_FALSE(wheel.empty());
        // Either one jump to the tick before, or the last ticks one by one.
        for (std::uint64_t t = stepwise ? std::max(start, node.when - 3) : node.when - 1;
             t < node.when; ++t) {
          EXPECT_TRUE(poll(wheel, t).empty());
          EXPECT_TRUE(node.linked);
          ASSERT_TRUE(wheel.next_expiration().has_value());
          EXPECT_LE(*wheel.next_expiration(), node.when);
        }
        EXPECT_EQ(poll(wheel, node.when), std::vector<TimerNode*>{&node});
        EXPECT_TRUE(wheel.empty());
        EXPECT_EQ(wheel.elapsed(), node.when);
      }
    }
  }
}

TEST(TimerWheel, InsertRefusesPastAndCurrentDeadlines) {
  TimerWheel wheel;
  TimerNode node;  // when = 0 = elapsed()
  EXPECT_FALSE(wheel.insert(&node));
  poll(wheel, 100);
  for (const std::uint64_t when : {std::uint64_t{0}, std::uint64_t{50}, std::uint64_t{100}}) {
    node.when = when;
    EXPECT_FALSE(wheel.insert(&node));
    EXPECT_FALSE(node.linked);
    EXPECT_TRUE(wheel.empty());
  }
  node.when = 101;
  EXPECT_TRUE(wheel.insert(&node));
  EXPECT_EQ(poll(wheel, 101), std::vector<TimerNode*>{&node});
}

TEST(TimerWheel, EqualDeadlinesFireInTheSamePoll) {
  constexpr std::uint64_t kWhen = 5000;
  TimerNode early[5];  // inserted from tick 0: level 2, cascaded down
  TimerNode late[5];   // inserted at tick 4990: level 0
  TimerWheel wheel;
  for (TimerNode& n : early) {
    n.when = kWhen;
    ASSERT_TRUE(wheel.insert(&n));
  }
  EXPECT_TRUE(poll(wheel, 4990).empty());
  for (TimerNode& n : late) {
    n.when = kWhen;
    ASSERT_TRUE(wheel.insert(&n));
  }
  EXPECT_TRUE(poll(wheel, kWhen - 1).empty());
  const auto fired = poll(wheel, kWhen);
  EXPECT_EQ(std::set<TimerNode*>(fired.begin(), fired.end()).size(), 10u);
  EXPECT_EQ(fired.size(), 10u);
  EXPECT_TRUE(wheel.empty());

  // The same in one far jump, from a higher level, with a later node left behind.
  TimerNode same[4];
  TimerNode after;
  for (TimerNode& n : same) {
    n.when = 3 * kDay;
    ASSERT_TRUE(wheel.insert(&n));
  }
  after.when = 3 * kDay + 1;
  ASSERT_TRUE(wheel.insert(&after));
  EXPECT_EQ(poll(wheel, 3 * kDay).size(), 4u);
  EXPECT_TRUE(after.linked);
}

TEST(TimerWheel, RemovedNodesNeverFireAndTheirSlotEmpties) {
  TimerWheel wheel;
  TimerNode soon;
  TimerNode later;
  soon.when = 100;
  later.when = 5000;  // level 2, slot starting at 4096
  ASSERT_TRUE(wheel.insert(&soon));
  ASSERT_TRUE(wheel.insert(&later));
  // A higher-level slot opens when its first tick begins (at the end of the tick before).
  EXPECT_EQ(wheel.next_expiration(), 63u);  // soon's level-1 slot: ticks 64..127
  wheel.remove(&soon);
  EXPECT_FALSE(soon.linked);
  EXPECT_EQ(wheel.next_expiration(), 4095u);
  wheel.remove(&later);
  EXPECT_TRUE(wheel.empty());
  EXPECT_EQ(wheel.next_expiration(), std::nullopt);
  EXPECT_TRUE(poll(wheel, 10'000).empty());

  // Nodes sharing a slot: remove from the middle, the head and the tail; the slot stays
  // occupied until its last node goes.
  TimerNode a;
  TimerNode b;
  TimerNode c;
  TimerNode d;
  for (TimerNode* n : {&a, &b, &c, &d}) {
    n->when = 10'010;
    ASSERT_TRUE(wheel.insert(n));
  }
  wheel.remove(&b);
  wheel.remove(&d);  // the head: inserted last
  EXPECT_EQ(wheel.next_expiration(), 10'010u);
  const auto fired = poll(wheel, 10'010);
  EXPECT_EQ(std::set<TimerNode*>(fired.begin(), fired.end()), (std::set<TimerNode*>{&a, &c}));
  EXPECT_EQ(fired.size(), 2u);

  for (TimerNode* n : {&a, &b, &c}) {
    n->when = 10'020;
    ASSERT_TRUE(wheel.insert(n));
  }
  wheel.remove(&a);  // the tail
  wheel.remove(&c);
  EXPECT_FALSE(wheel.empty());
  wheel.remove(&b);
  EXPECT_TRUE(wheel.empty());
  EXPECT_TRUE(poll(wheel, 20'000).empty());
}

TEST(TimerWheel, HigherLevelNodeCascadesDownThenFires) {
  TimerWheel wheel;
  TimerNode node;
  node.when = 3 * 4096 + 5 * 64 + 17;  // level 2 from tick 0
  ASSERT_TRUE(wheel.insert(&node));
  EXPECT_EQ(node.level, 2);
  // The slot opens as its first tick begins: earlier than `when`.
  EXPECT_EQ(wheel.next_expiration(), 3 * 4096 - 1u);
  EXPECT_TRUE(poll(wheel, 3 * 4096 - 1).empty());
  EXPECT_TRUE(node.linked);
  EXPECT_EQ(node.level, 1);
  EXPECT_EQ(wheel.next_expiration(), 3 * 4096 + 5 * 64 - 1u);
  EXPECT_TRUE(poll(wheel, 3 * 4096 + 5 * 64 - 1).empty());
  EXPECT_EQ(node.level, 0);
  EXPECT_EQ(wheel.next_expiration(), node.when);
  EXPECT_TRUE(poll(wheel, node.when - 1).empty());
  EXPECT_EQ(poll(wheel, node.when), std::vector<TimerNode*>{&node});
}

TEST(TimerWheel, DeadlinesDaysAwayAndBeyondTheSpanFireExactlyOnTime) {
  const std::uint64_t deadlines[] = {kDay, 7 * kDay, 30 * kDay, 1000 * kDay /* > span */,
                                     3 * kSpan + 12'345};
  for (const std::uint64_t delta : deadlines) {
    SCOPED_TRACE(delta);
    // One jump straight past the deadline.
    {
      TimerWheel wheel;
      poll(wheel, 777);
      TimerNode node;
      node.when = 777 + delta;
      ASSERT_TRUE(wheel.insert(&node));
      EXPECT_EQ(poll(wheel, node.when + kDay), std::vector<TimerNode*>{&node});
    }
    // Hour by hour, then tick by tick around the deadline; the node waits in a top-level
    // slot and is placed again by its true deadline whenever a clamped slot is reached.
    TimerWheel wheel;
    poll(wheel, 777);
    TimerNode node;
    node.when = 777 + delta;
    ASSERT_TRUE(wheel.insert(&node));
    constexpr std::uint64_t kHour = 3'600'000;
    std::uint64_t t = 777;
    for (; t + kHour < node.when - 64; t += kHour) {
      ASSERT_TRUE(poll(wheel, t).empty());
      ASSERT_LE(wheel.next_expiration().value(), node.when);
    }
    for (t = node.when - 64; t < node.when; ++t) ASSERT_TRUE(poll(wheel, t).empty());
    EXPECT_EQ(wheel.next_expiration(), node.when);
    EXPECT_EQ(poll(wheel, node.when), std::vector<TimerNode*>{&node});
    EXPECT_TRUE(poll(wheel, node.when + 1).empty());
  }
}

TEST(TimerWheel, JumpingFromExpirationToExpirationReachesAFarNodeOnTime) {
  TimerWheel wheel;
  TimerNode node;
  node.when = 2 * kSpan + kSpan / 3;
  ASSERT_TRUE(wheel.insert(&node));
  int jumps = 0;
  for (;;) {
    const std::uint64_t next = wheel.next_expiration().value();
    ASSERT_GT(next, wheel.elapsed());
    ASSERT_LE(next, node.when);
    const auto fired = poll(wheel, next);
    if (!fired.empty()) {
      EXPECT_EQ(fired, std::vector<TimerNode*>{&node});
      EXPECT_EQ(next, node.when);
      break;
    }
    ASSERT_LT(++jumps, 20);  // a few top-level ring laps, then one cascade per level
  }
}

// Many nodes at random deadlines (fixed seed) on levels 0-2 come out once each, in order:
// at exactly their tick when polled tick by tick, within (previous now, now] when jumping.
TEST(TimerWheel, RandomDeadlinesFireOnceInOrderTickByTickAndInJumps) {
  constexpr std::uint64_t kEnd = std::uint64_t{1} << 17;
  for (const bool jumps : {false, true}) {
    SCOPED_TRACE(jumps ? "jumps" : "tick by tick");
    std::mt19937_64 rng(jumps ? 2 : 1);
    std::vector<TimerNode> nodes(2000);
    TimerWheel wheel;
    for (TimerNode& n : nodes) {
      n.when = random_delta(rng, 17);
      ASSERT_TRUE(wheel.insert(&n));
    }
    std::set<TimerNode*> seen;
    std::uint64_t last_when = 0;
    for (std::uint64_t prev = 0; prev < kEnd;) {
      const std::uint64_t now = jumps ? prev + random_delta(rng, 14) : prev + 1;
      for (TimerNode* n : poll(wheel, now)) {
        ASSERT_GT(n->when, prev);
        ASSERT_LE(n->when, now);
        ASSERT_GE(n->when, last_when);
        ASSERT_TRUE(seen.insert(n).second);
        last_when = n->when;
      }
      prev = now;
    }
    EXPECT_EQ(seen.size(), nodes.size());
    EXPECT_TRUE(wheel.empty());
  }
}

// Random inserts, removes and polls of every size (fixed seed), checked against a sorted
// reference: each poll hands out exactly the nodes due by `now`, in order; empty() agrees;
// next_expiration is after elapsed() and never later than the earliest deadline.
TEST(TimerWheel, MatchesASortedReferenceUnderRandomOperations) {
  std::mt19937_64 rng(42);
  std::vector<TimerNode> nodes(200);
  std::set<std::pair<std::uint64_t, TimerNode*>> linked;  // (when, node)
  TimerWheel wheel;
  const auto poll_and_check = [&](std::uint64_t now) {
    std::vector<std::pair<std::uint64_t, TimerNode*>> due;
    while (!linked.empty() && linked.begin()->first <= now) {
      due.push_back(*linked.begin());
      linked.erase(linked.begin());
    }
    std::vector<std::pair<std::uint64_t, TimerNode*>> fired;
    for (TimerNode* n : poll(wheel, now)) fired.emplace_back(n->when, n);
    EXPECT_TRUE(std::is_sorted(fired.begin(), fired.end(),
                               [](const auto& x, const auto& y) { return x.first < y.first; }));
    std::sort(fired.begin(), fired.end());
    EXPECT_EQ(fired, due);
  };
  for (int op = 0; op < 20'000; ++op) {
    TimerNode& node = nodes[rng() % nodes.size()];
    const std::uint64_t start = wheel.elapsed();
    switch (rng() % 5) {
      case 0:
      case 1:
        if (node.linked) {
          wheel.remove(&node);
          linked.erase({node.when, &node});
        } else {
          node.when = start + random_delta(rng, 40);
          ASSERT_TRUE(wheel.insert(&node));
          linked.emplace(node.when, &node);
        }
        break;
      case 2:
        poll_and_check(start + random_delta(rng, 12));
        break;
      case 3:
        poll_and_check(start + random_delta(rng, 40));
        break;
      case 4:  // the tick before the earliest deadline, then that deadline
        if (linked.empty()) break;
        poll_and_check(linked.begin()->first - 1);
        poll_and_check(linked.begin()->first);
        break;
    }
    ASSERT_EQ(wheel.empty(), linked.empty());
    if (!linked.empty()) {
      const auto next = wheel.next_expiration();
      ASSERT_TRUE(next.has_value());
      ASSERT_GT(*next, wheel.elapsed());
      ASSERT_LE(*next, linked.begin()->first);
    }
  }
}

TEST(TimerWheel, PollBackwardsIsANoOp) {
  TimerWheel wheel;
  TimerNode node;
  node.when = 1500;
  ASSERT_TRUE(wheel.insert(&node));
  EXPECT_TRUE(poll(wheel, 1000).empty());
  const auto next = wheel.next_expiration();
  EXPECT_TRUE(poll(wheel, 500).empty());
  EXPECT_EQ(wheel.elapsed(), 1000u);
  EXPECT_EQ(wheel.next_expiration(), next);
  EXPECT_TRUE(poll(wheel, 1499).empty());
  EXPECT_EQ(poll(wheel, 1500), std::vector<TimerNode*>{&node});
}

// --- Ticks longer than one unit (the time driver: nanoseconds, 1 ms ticks) ---

constexpr std::uint64_t kTick = 1000;

TEST(TimerWheelSubTick, ALoneNodeFiresAtItsDeadlineNotAtItsTicksEnd) {
  for (const std::uint64_t when : {kTick * 7 + 1, kTick * 7 + 400, kTick * 8, kTick * 5000 + 3}) {
    SCOPED_TRACE(when);
    TimerWheel wheel(kTick);
    TimerNode node;
    node.when = when;
    ASSERT_TRUE(wheel.insert(&node));
    EXPECT_EQ(node.tick, (when + kTick - 1) / kTick);
    // A higher level's slot first comes due at its start, to move the node down.
    while (wheel.next_expiration().value() < when) {
      EXPECT_TRUE(poll(wheel, *wheel.next_expiration()).empty());
    }
    EXPECT_EQ(wheel.next_expiration(), when);
    EXPECT_EQ(wheel.earliest_fire(node), when);
    EXPECT_TRUE(poll(wheel, when - 1).empty());
    EXPECT_EQ(poll(wheel, when), std::vector<TimerNode*>{&node});
    EXPECT_EQ(wheel.elapsed(), when / kTick);  // the last tick that ended
    EXPECT_TRUE(wheel.empty());
  }
}

TEST(TimerWheelSubTick, ATicksNodesFireTogetherOnceTheLatestDeadlineHasPassed) {
  TimerWheel wheel(kTick);
  TimerNode a;
  TimerNode b;
  TimerNode next_tick;
  a.when = 3 * kTick + 100;
  b.when = 3 * kTick + 600;
  next_tick.when = 4 * kTick + 50;
  for (TimerNode* n : {&a, &b, &next_tick}) ASSERT_TRUE(wheel.insert(n));
  EXPECT_EQ(wheel.next_expiration(), b.when);
  EXPECT_EQ(wheel.earliest_fire(a), b.when);
  EXPECT_TRUE(poll(wheel, a.when).empty());  // a is due, but its tick fires as one
  const auto fired = poll(wheel, b.when);
  EXPECT_EQ(std::set<TimerNode*>(fired.begin(), fired.end()), (std::set<TimerNode*>{&a, &b}));
  EXPECT_EQ(fired.size(), 2u);
  EXPECT_EQ(wheel.elapsed(), 3u);  // the tick of a and b has not ended

  // A node of that same tick inserted now, with a later deadline, is not taken for due.
  TimerNode late;
  late.when = 3 * kTick + 900;
  ASSERT_TRUE(wheel.insert(&late));
  EXPECT_EQ(wheel.next_expiration(), late.when);
  EXPECT_TRUE(poll(wheel, late.when - 1).empty());
  EXPECT_EQ(poll(wheel, late.when), std::vector<TimerNode*>{&late});
  EXPECT_EQ(poll(wheel, next_tick.when), std::vector<TimerNode*>{&next_tick});
  EXPECT_TRUE(wheel.empty());
}

TEST(TimerWheelSubTick, RemovingTheLatestKeepsItsTimeWithinTheTick) {
  TimerWheel wheel(kTick);
  TimerNode kept;
  TimerNode removed;
  kept.when = 9 * kTick + 200;
  removed.when = 9 * kTick + 700;
  ASSERT_TRUE(wheel.insert(&kept));
  ASSERT_TRUE(wheel.insert(&removed));
  wheel.remove(&removed);
  // Not lowered to kept's deadline (that would take a scan), but still within the tick.
  EXPECT_EQ(wheel.next_expiration(), removed.when);
  EXPECT_TRUE(poll(wheel, removed.when - 1).empty());
  EXPECT_EQ(poll(wheel, removed.when), std::vector<TimerNode*>{&kept});
  // Emptied, the slot forgets it: a lone node there fires at its own deadline.
  TimerNode again;
  again.when = 9 * kTick + 800;
  ASSERT_TRUE(wheel.insert(&again));
  EXPECT_EQ(wheel.next_expiration(), again.when);
  wheel.remove(&again);
  kept.when = 10 * kTick + 1;
  ASSERT_TRUE(wheel.insert(&kept));
  EXPECT_EQ(wheel.next_expiration(), kept.when);
}

// Random inserts, removes and polls (fixed seed) against a reference that knows each tick's
// nodes and the latest deadline inserted since the tick last had none: a poll hands out every
// node of each tick that has ended, and the nodes of the tick `now` is in exactly when that
// latest deadline has passed; never a node before its deadline; next_expiration is never
// later than the time the next node fires.
TEST(TimerWheelSubTick, MatchesAReferenceUnderRandomOperations) {
  std::mt19937_64 rng(7);
  std::vector<TimerNode> nodes(100);
  std::map<std::uint64_t, std::set<TimerNode*>> ticks;  // tick -> its linked nodes
  std::map<std::uint64_t, std::uint64_t> latest;        // tick -> latest since last empty
  TimerWheel wheel(kTick);
  std::uint64_t now = 0;
  const auto fire_time = [&](std::uint64_t tick) { return latest.at(tick); };
  for (int op = 0; op < 20'000; ++op) {
    TimerNode& node = nodes[rng() % nodes.size()];
    if (rng() % 3 != 0) {
      if (node.linked) {
        wheel.remove(&node);
        if (ticks[node.tick].erase(&node), ticks[node.tick].empty()) {
          ticks.erase(node.tick);
          latest.erase(node.tick);
        }
      } else {
        node.when = now + 1 + rng() % (rng() % 2 ? 3 * kTick : 300 * kTick);
        ASSERT_TRUE(wheel.insert(&node));
        ticks[node.tick].insert(&node);
        latest[node.tick] = std::max(latest[node.tick], node.when);
      }
    } else {
      now += rng() % (rng() % 2 ? kTick : 100 * kTick);
      std::set<TimerNode*> due;
      while (!ticks.empty() && fire_time(ticks.begin()->first) <= now) {
        due.insert(ticks.begin()->second.begin(), ticks.begin()->second.end());
        latest.erase(ticks.begin()->first);
        ticks.erase(ticks.begin());
      }
      const auto fired = poll(wheel, now);
      for (TimerNode* n : fired) ASSERT_LE(n->when, now) << "fired early";
      ASSERT_EQ(std::set<TimerNode*>(fired.begin(), fired.end()), due);
      ASSERT_EQ(fired.size(), due.size());
    }
    ASSERT_EQ(wheel.empty(), ticks.empty());
    if (!ticks.empty()) {
      ASSERT_LE(wheel.next_expiration().value(), fire_time(ticks.begin()->first));
    }
  }
}

// A poll stopped by its callback leaves the rest due for the next poll, which hands them out
// (a node inserted in between included, when due), then advances.
TEST(TimerWheel, APollStoppedByItsCallbackLeavesTheRestForTheNext) {
  TimerWheel wheel;
  std::vector<TimerNode> nodes(5);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].when = 10 + i % 2;  // two ticks: 10 and 11
    ASSERT_TRUE(wheel.insert(&nodes[i]));
  }
  std::vector<TimerNode*> fired;
  const auto take_two = [&](TimerNode* n) {
    fired.push_back(n);
    return fired.size() % 2 != 0;
  };
  EXPECT_FALSE(wheel.poll(20, take_two));
  EXPECT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0]->when, 10u);
  EXPECT_EQ(wheel.elapsed(), 0u);  // not advanced: the poll did not finish
  TimerNode late;
  late.when = 15;
  ASSERT_TRUE(wheel.insert(&late));
  EXPECT_FALSE(wheel.poll(20, take_two));
  EXPECT_FALSE(wheel.poll(20, take_two));
  EXPECT_TRUE(wheel.poll(20, take_two));  // the sixth node: done
  EXPECT_EQ(fired.size(), 6u);
  EXPECT_EQ(std::set<TimerNode*>(fired.begin(), fired.end()).size(), 6u);
  EXPECT_EQ(fired.back(), &late);
  EXPECT_TRUE(
      std::is_sorted(fired.begin(), fired.end(),
                     [](const TimerNode* a, const TimerNode* b) { return a->when < b->when; }));
  EXPECT_EQ(wheel.elapsed(), 20u);
  EXPECT_TRUE(wheel.empty());
}

TEST(TimerWheel, NodeCanBeInsertedAgainAfterItFired) {
  TimerWheel wheel;
  TimerNode node;
  node.when = 100;
  ASSERT_TRUE(wheel.insert(&node));
  EXPECT_EQ(poll(wheel, 100), std::vector<TimerNode*>{&node});
  EXPECT_FALSE(wheel.insert(&node));  // its old deadline is now due
  node.when = 100 + kDay;
  ASSERT_TRUE(wheel.insert(&node));
  EXPECT_TRUE(poll(wheel, node.when - 1).empty());
  EXPECT_EQ(poll(wheel, node.when), std::vector<TimerNode*>{&node});
  EXPECT_TRUE(wheel.empty());
}

}  // namespace
