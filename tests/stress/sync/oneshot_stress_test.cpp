// Stress (run under TSan): 10^6 oneshot channels, in rounds of 10,000. Senders run on an
// outside thread and in a task; receivers are awaited by another outside thread under
// block_on (some polled once by hand first), awaited by a task, dropped or closed by a third
// thread while the senders send; some senders are dropped unsent. The invariants, per
// channel: every value is received or refused exactly once (or, its receiver dropped, goes
// with the channel), a received value is the one sent and intact, every receiver whose
// sender was dropped gets RecvError, and every value is destroyed exactly once (a counting
// payload: none live after each round).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "spool/spool.hpp"
#include "spool/sync/oneshot.hpp"
#include "support/checked_payload.hpp"

namespace oneshot_stress_test {
namespace {

using Payload = spool_test::CheckedPayload;
using spool::oneshot::RecvError;

constexpr std::size_t kRounds = 100;
constexpr std::size_t kBatch = 10'000;  // channels per round: 10^6 in all
constexpr std::size_t kChunk = 64;      // the block_on thread takes each 64 in reverse

// What happens to channel i of a round, by i % 8. Even channels are sent on by an outside
// thread, odd ones by a task. Receivers: 0, 1, 7 awaited under block_on on an outside
// thread, 6 polled once by hand there first; 2, 3 awaited by a task; 4 dropped and 5 closed
// (then try_recv) by a third thread; the sender of 7 is dropped without sending.
enum Role : std::size_t {
  kDroppedReceiver = 4,
  kClosedReceiver = 5,
  kPolledFirst = 6,
  kUnsent = 7,
};
bool on_block_on_thread(std::size_t i) {
  const std::size_t r = i % 8;
  return r == 0 || r == 1 || r == kPolledFirst || r == kUnsent;
}
bool in_task(std::size_t i) { return i % 8 == 2 || i % 8 == 3; }

// Outcomes stored per channel.
enum Got : std::uint8_t { kNothing = 0, kIntact = 1, kCorrupt = 2, kNoValueAfterClose = 3 };

struct Round {
  Round() {
    senders.reserve(kBatch);
    receivers.reserve(kBatch);
    for (std::size_t i = 0; i < kBatch; ++i) {
      auto [tx, rx] = spool::oneshot::channel<Payload>();
      senders.push_back(std::move(tx));
      receivers.push_back(std::move(rx));
    }
  }

  void got(std::size_t i, const Payload& p) {
    received[i].store(p.intact() && p.value() == i ? kIntact : kCorrupt, std::memory_order_relaxed);
  }

  std::vector<spool::oneshot::Sender<Payload>> senders;
  std::vector<spool::oneshot::Receiver<Payload>> receivers;
  // Per channel, each stored (relaxed) at most once by the one thread or task that handles
  // that side of the channel, and loaded (relaxed) by the test thread after the threads'
  // joins and the tasks' JoinHandles, which order the stores before the loads.
  std::vector<std::atomic<std::uint8_t>> accepted = make(kBatch);  // send returned true
  std::vector<std::atomic<std::uint8_t>> received = make(kBatch);  // a Got
  std::vector<std::atomic<std::uint8_t>> errors = make(kBatch);    // RecvError thrown

 private:
  static std::vector<std::atomic<std::uint8_t>> make(std::size_t n) {
    return std::vector<std::atomic<std::uint8_t>>(n);
  }
};

void send_one(Round& r, std::atomic<std::int64_t>& live, std::size_t i) {
  if (i % 8 == kUnsent) {
    auto unsent = std::move(r.senders[i]);
    return;
  }
  if (r.senders[i].send(Payload(live, i))) r.accepted[i].store(1, std::memory_order_relaxed);
}

spool::Task<void> send_odd(Round* r, std::atomic<std::int64_t>* live) {
  for (std::size_t i = 1; i < kBatch; i += 2) {
    send_one(*r, *live, i);
    if (i % 128 == 127) co_await spool::yield_now();
  }
}

spool::Task<void> receive_in_task(Round* r) {
  for (std::size_t i = 0; i < kBatch; ++i) {
    if (!in_task(i)) continue;
    try {
      const Payload p = co_await std::move(r->receivers[i]);
      r->got(i, p);
    } catch (const RecvError&) {
      r->errors[i].store(1, std::memory_order_relaxed);
    }
  }
}

void receive_on_thread(Round& r) {
  spool::Waker w = spool::Waker::noop();
  spool::Context cx(w);
  for (std::size_t c = 0; c < kBatch; c += kChunk) {
    // Last first: one wait covers most of the chunk, the rest race the senders.
    for (std::size_t i = std::min(c + kChunk, kBatch); i-- > c;) {
      if (!on_block_on_thread(i)) continue;
      try {
        if (i % 8 == kPolledFirst) {
          auto p = r.receivers[i].poll(cx);
          if (p.is_ready()) {
            r.got(i, p.value());
            continue;
          }
        }
        r.got(i, spool::block_on(std::move(r.receivers[i])));
      } catch (const RecvError&) {
        r.errors[i].store(1, std::memory_order_relaxed);
      }
    }
  }
}

void drop_or_close(Round& r) {
  for (std::size_t i = 0; i < kBatch; ++i) {
    if (i % 8 == kDroppedReceiver) {
      auto gone = std::move(r.receivers[i]);
    } else if (i % 8 == kClosedReceiver) {
      r.receivers[i].close();
      try {
        // A value sent before the close is still there; otherwise the send is refused.
        if (auto v = r.receivers[i].try_recv()) {
          r.got(i, *v);
        } else {
          r.received[i].store(kNoValueAfterClose, std::memory_order_relaxed);
        }
      } catch (const RecvError&) {
        r.errors[i].store(1, std::memory_order_relaxed);
      }
    }
  }
}

struct Totals {
  std::uint64_t values = 0;          // values sent or refused (every channel but the unsent)
  std::uint64_t received = 0;        // received intact
  std::uint64_t refused = 0;         // send returned false
  std::uint64_t discarded = 0;       // accepted, then freed with a dropped receiver
  std::uint64_t recv_errors = 0;     // RecvError
  std::uint64_t closed_refused = 0;  // refused by a closed receiver (which got RecvError)
  std::uint64_t wrong = 0;           // channels whose outcome breaks the invariant
};

void tally(const Round& r, Totals& t) {
  for (std::size_t i = 0; i < kBatch; ++i) {
    const bool acc = r.accepted[i].load(std::memory_order_relaxed) == 1;
    const std::uint8_t got = r.received[i].load(std::memory_order_relaxed);
    const bool err = r.errors[i].load(std::memory_order_relaxed) == 1;
    t.recv_errors += err ? 1 : 0;
    bool ok = false;
    switch (i % 8) {
      case kUnsent:
        ok = !acc && got == kNothing && err;
        break;
      case kDroppedReceiver:
        ok = got == kNothing && !err;
        break;
      case kClosedReceiver:  // received, or refused (and the receiver told so): one of them
        ok = (acc && got == kIntact && !err) || (!acc && got == kNothing && err);
        break;
      default:  // awaited: the receiver was there for the send
        ok = acc && got == kIntact && !err;
        break;
    }
    if (i % 8 != kUnsent) {
      ++t.values;
      t.received += got == kIntact ? 1 : 0;
      t.refused += acc ? 0 : 1;
      t.discarded += acc && i % 8 == kDroppedReceiver ? 1 : 0;
      t.closed_refused += !acc && i % 8 == kClosedReceiver ? 1 : 0;
    }
    t.wrong += ok ? 0 : 1;
  }
}

TEST(OneshotStress, ChannelsAcrossThreadsAndTasks) {
  auto rt = spool::Builder::multi_thread().worker_threads(2).build();
  // Payloads alive (see CheckedPayload): 0 after each round.
  std::atomic<std::int64_t> live{0};
  Totals t;
  for (std::size_t round = 0; round < kRounds; ++round) {
    {
      Round r;
      auto sender_task = rt.spawn(send_odd(&r, &live));
      auto receiver_task = rt.spawn(receive_in_task(&r));
      std::thread sender([&r, &live] {
        for (std::size_t i = 0; i < kBatch; i += 2) send_one(r, live, i);
      });
      std::thread receiver([&r] { receive_on_thread(r); });
      std::thread dropper([&r] { drop_or_close(r); });
      sender.join();
      receiver.join();
      dropper.join();
      spool::block_on(std::move(sender_task));
      spool::block_on(std::move(receiver_task));
      tally(r, t);
    }
    ASSERT_EQ(live.load(std::memory_order_relaxed), 0) << "round " << round;
  }
  constexpr std::uint64_t kChannels = kRounds * kBatch;
  EXPECT_EQ(t.wrong, 0u);
  EXPECT_EQ(t.values, kChannels / 8 * 7);
  EXPECT_EQ(t.received + t.refused + t.discarded, t.values)
      << "received " << t.received << ", refused " << t.refused << ", discarded " << t.discarded;
  EXPECT_EQ(t.recv_errors, kChannels / 8 + t.closed_refused);
}

}  // namespace
}  // namespace oneshot_stress_test
