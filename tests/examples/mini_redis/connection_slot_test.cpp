// The order in which a connection's task lets go of what it holds (ConnectionSlot): its permit
// must be back in the semaphore before run() can learn that the last connection is gone,
// because run() returning lets its caller destroy the server and the semaphore with it
// (issue 28: a SIGTERM with hundreds of connections open was a heap-use-after-free).
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <optional>

#include "server.hpp"
#include "spool/core/context.hpp"
#include "spool/core/waker.hpp"

namespace {

// What Server::run() does when its receiver wakes with the end of the channel: it returns,
// and the server (its semaphore) is destroyed. The wake-up runs inline in the thread that
// drops the last sender, so this sees the semaphore exactly as run() would.
struct ServerSide {
  std::unique_ptr<spool::Semaphore> connections;
  std::optional<std::size_t> permits_at_wake;

  void wake() {
    permits_at_wake = connections->available_permits();
    // Destroyed only when the permit is back: a wrong order fails the check below rather
    // than writing to freed memory.
    if (*permits_at_wake == 1) connections.reset();
  }
};

TEST(MiniRedisConnectionSlot, ThePermitIsBackBeforeTheServerLearnsTheConnectionEnded) {
  auto server = std::make_shared<ServerSide>();
  server->connections = std::make_unique<spool::Semaphore>(1);
  auto [done, all_closed] = spool::mpsc::channel<int>(1);
  auto permit = server->connections->try_acquire();
  ASSERT_TRUE(permit.has_value());
  auto slot = std::make_optional(mini_redis::ConnectionSlot{std::move(done), std::move(*permit)});

  // run() waits for the end of the channel.
  const spool::Waker waker = spool::Waker::from(server);
  spool::Context cx(waker);
  auto end = all_closed.recv();
  ASSERT_TRUE(end.poll(cx).is_pending());

  slot.reset();  // the connection's task ends
  ASSERT_TRUE(server->permits_at_wake.has_value()) << "run() was never woken";
  EXPECT_EQ(*server->permits_at_wake, 1u)
      << "run() was woken while the connection still held its permit";
  EXPECT_EQ(server->connections, nullptr);
}

}  // namespace
