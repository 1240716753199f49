// mini-redis's publish/subscribe: which connections listen on which channel, and the
// delivery of a PUBLISH to each of them through its own bounded queue.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "spool/sync/mpsc.hpp"

namespace mini_redis {

/// One subscribed connection's mailbox: the queue its messages go through (already written
/// as RESP "message" replies), and whether one was dropped because the queue was full.
struct Mailbox {
  /// How many messages may wait for a subscriber that reads slowly; one more, and it is
  /// disconnected (as redis-server does past its pubsub output-buffer limit).
  static constexpr std::size_t kCapacity = 1024;

  /// A mailbox with a new queue; the connection keeps `rx`.
  Mailbox();

  std::uint64_t id;                       ///< the connection's subscriber id
  spool::mpsc::Sender<std::string> tx;    ///< publishers' end of the queue
  spool::mpsc::Receiver<std::string> rx;  ///< the connection's end
  /// Set by a publisher that found the queue full; the connection then closes. Protocol:
  /// written only by PubSub::publish (store true, relaxed), read only by the connection
  /// (relaxed loads before each command and after each wake-up). Relaxed both ways: no other
  /// data is published with the flag, and a late sight of it only closes the connection a
  /// command later.
  std::shared_ptr<std::atomic<bool>> overflowed = std::make_shared<std::atomic<bool>>(false);

 private:
  using Ends = std::pair<spool::mpsc::Sender<std::string>, spool::mpsc::Receiver<std::string>>;
  Mailbox(std::uint64_t id, Ends ends);
};

/// The channels and their subscribers. Thread-safe (one lock).
class PubSub {
 public:
  /// Adds `box` to `channel`'s subscribers (no-op if it is one already).
  void subscribe(const std::string& channel, const Mailbox& box);
  /// Removes `box` from `channel`'s subscribers.
  void unsubscribe(const std::string& channel, const Mailbox& box);
  /// Queues `message` for each subscriber of `channel`: the count of subscribers (one whose
  /// mailbox is full is counted, and disconnected).
  std::size_t publish(const std::string& channel, const std::string& message);

 private:
  // A subscriber as the channel knows it: the connection's id and its mailbox's ends.
  struct Subscriber {
    std::uint64_t id;
    spool::mpsc::Sender<std::string> tx;
    std::shared_ptr<std::atomic<bool>> overflowed;  // Mailbox::overflowed (same protocol)
  };
  std::mutex mutex_;                                                   // guards channels_
  std::unordered_map<std::string, std::vector<Subscriber>> channels_;  // never empty vectors
};

}  // namespace mini_redis
