// mini-redis's pub/sub without sockets: a PUBLISH is written once and shared by every
// subscriber's mailbox; with publishers, and subscribers coming and going, on several
// threads at once (a stress test for ThreadSanitizer, bounded by counts), every subscriber
// of a channel receives its messages in one and the same order.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pubsub.hpp"

namespace {

using mini_redis::Mailbox;
using mini_redis::Message;
using mini_redis::PubSub;

std::vector<Message> drain(Mailbox& box) {
  std::vector<Message> got;
  while (auto m = box.rx.try_recv()) got.push_back(std::move(*m));
  return got;
}

TEST(MiniRedisPubSub, APublishIsOneBufferSharedByEverySubscriber) {
  PubSub pubsub;
  std::vector<std::unique_ptr<Mailbox>> boxes;
  for (int i = 0; i < 3; ++i) {
    boxes.push_back(std::make_unique<Mailbox>());
    pubsub.subscribe("news", *boxes.back());
  }
  EXPECT_EQ(pubsub.publish("news", "hello"), 3u);
  std::vector<Message> got;
  for (auto& box : boxes) {
    auto m = drain(*box);
    ASSERT_EQ(m.size(), 1u);
    got.push_back(m[0]);
  }
  EXPECT_EQ(*got[0], "*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n");
  EXPECT_EQ(got[0].get(), got[1].get()) << "each subscriber got a copy";
  EXPECT_EQ(got[0].get(), got[2].get()) << "each subscriber got a copy";
}

TEST(MiniRedisPubSub, SubscribersOfAChannelSeeItsMessagesInOneOrder) {
  constexpr int kPublishers = 2;
  constexpr int kMessages = 400;  // each publisher's; all fit in a mailbox (1,024)
  constexpr int kChurn = 300;     // subscribe/unsubscribe rounds of the other thread
  PubSub pubsub;
  constexpr int kSubscribers = 32;  // a long enough loop for publishers to overlap in it
  std::vector<std::unique_ptr<Mailbox>> steady;
  for (int i = 0; i < kSubscribers; ++i) {
    steady.push_back(std::make_unique<Mailbox>());
    pubsub.subscribe("c", *steady.back());
  }
  std::vector<std::thread> threads;
  for (int p = 0; p < kPublishers; ++p) {
    threads.emplace_back([&pubsub, p] {
      for (int i = 0; i < kMessages; ++i) {
        const std::string message = std::to_string(p) + ":" + std::to_string(i);
        EXPECT_GE(pubsub.publish("c", message), static_cast<std::size_t>(kSubscribers));
      }
    });
  }
  // Another subscriber comes and goes, so that the channel leaves the map and comes back
  // while publishers hold it (on a second channel, and on "c", which never empties).
  threads.emplace_back([&pubsub] {
    Mailbox passing;
    for (int i = 0; i < kChurn; ++i) {
      pubsub.subscribe("c", passing);
      pubsub.subscribe("d", passing);
      pubsub.unsubscribe("c", passing);
      pubsub.unsubscribe("d", passing);
      (void)pubsub.publish("d", "x");
      (void)drain(passing);
    }
  });
  for (auto& t : threads) t.join();
  const std::vector<Message> first = drain(*steady[0]);
  ASSERT_EQ(first.size(), static_cast<std::size_t>(kPublishers * kMessages));
  for (std::size_t s = 1; s < steady.size(); ++s) {
    const std::vector<Message> other = drain(*steady[s]);
    ASSERT_EQ(other.size(), first.size());
    for (std::size_t i = 0; i < first.size(); ++i) {
      ASSERT_EQ(other[i].get(), first[i].get()) << "subscriber " << s << ", message " << i;
    }
  }
}

}  // namespace
