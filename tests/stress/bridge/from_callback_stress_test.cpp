// Stress (run under TSan): 10^5 from_callback operations, in rounds of 1,000, whose callbacks
// are called by another thread while this one drops the futures (in the opposite order, so
// that drops and calls meet mid-round) or, for every fourth, waits for the result under
// block_on. The invariants, per operation: the callback's one call never throws (one call
// each), a waited result is the value sent and intact, the cancel runs at most once and
// never for a waited operation, and afterwards no payload and no waker handle is left alive
// (a late callback's result goes with its last copy, a dropped future's waker with the drop).
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "spool/from_callback.hpp"
#include "spool/spool.hpp"
#include "support/checked_payload.hpp"
#include "support/counting_waker.hpp"

namespace {

using Payload = spool_test::CheckedPayload;

constexpr std::size_t kRounds = 100;
constexpr std::size_t kBatch = 1'000;  // operations per round: 10^5 in all

bool waited(std::size_t i) { return i % 4 == 0; }

TEST(FromCallbackStress, CallbacksFromAnotherThreadRaceDropsAndWaits) {
  std::atomic<std::int64_t> live{0};
  spool_test::CountingWaker waker;
  for (std::size_t round = 0; round < kRounds; ++round) {
    std::vector<std::atomic<int>> cancels(kBatch);
    std::vector<std::optional<spool::Callback<Payload>>> callbacks(kBatch);
    auto start = [&](std::size_t i) {
      return [&, i](spool::Callback<Payload> cb) {
        callbacks[i].emplace(std::move(cb));
        return [&cancels, i] { cancels[i].fetch_add(1, std::memory_order_relaxed); };
      };
    };
    using Fut = decltype(spool::from_callback<Payload>(start(0)));
    std::vector<std::optional<Fut>> futures(kBatch);
    for (std::size_t i = 0; i < kBatch; ++i) {
      futures[i].emplace(spool::from_callback<Payload>(start(i)));
      spool::Waker w = waker.waker();
      spool::Context cx(w);
      ASSERT_TRUE(futures[i]->poll(cx).is_pending());
    }
    std::atomic<std::size_t> throws{0};
    std::thread completer([&] {
      for (std::size_t i = 0; i < kBatch; ++i) {
        try {
          (*callbacks[i])(Payload(live, i + 1));
        } catch (...) {
          throws.fetch_add(1);
        }
        callbacks[i].reset();
      }
    });
    std::size_t bad_values = 0;
    for (std::size_t k = kBatch; k-- > 0;) {
      if (waited(k)) {
        Payload got = spool::block_on(*futures[k]);
        if (!got.intact() || got.value() != k + 1) ++bad_values;
      }
      futures[k].reset();
    }
    completer.join();
    EXPECT_EQ(throws.load(), 0u);
    EXPECT_EQ(bad_values, 0u);
    for (std::size_t i = 0; i < kBatch; ++i) {
      EXPECT_LE(cancels[i].load(), waited(i) ? 0 : 1) << "operation " << i;
    }
    EXPECT_EQ(live.load(), 0) << "round " << round;
    EXPECT_EQ(waker.counts().live(), 0) << "round " << round;
    if (HasFailure()) return;
  }
}

}  // namespace
