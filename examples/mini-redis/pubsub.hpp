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
#include "spool/sync/notify.hpp"

namespace mini_redis {

/// What the publishers and a subscribed connection share about its mailbox.
struct Backlog {
  /// Set by a publisher that found the mailbox over a limit; the connection then closes.
  /// Protocol: set only by PubSub::publish (exchange(true), relaxed; the one that set it
  /// also notifies `overflow`), read only by the connection (relaxed loads before each
  /// command and after each wake-up). Relaxed both ways: no other data is published with the
  /// flag, and a late sight of it only closes the connection a command later.
  std::atomic<bool> overflowed{false};
  /// Notified once, by the publisher that set `overflowed`: wakes a connection that waits
  /// for its client (to read, or to take a reply) so that it closes at once.
  spool::Notify overflow;
  /// The bytes of the messages queued for the subscriber and not yet written to its socket
  /// (in the mailbox, or taken out and waiting in the connection's output, as redis-server's
  /// output buffer): added (fetch_add, relaxed) by PubSub::publish before it queues one,
  /// subtracted (fetch_sub, relaxed) by the connection once it wrote them
  /// (Mailbox::written). Relaxed: a count that publishes no data. Publishers add under
  /// PubSub's lock, one at a time, so the bound holds exactly.
  std::atomic<std::size_t> bytes{0};
};

/// One subscribed connection's mailbox: the queue its messages go through (already written
/// as RESP "message" replies), and its Backlog.
struct Mailbox {
  /// How many messages may wait for a subscriber that reads slowly, and how many bytes
  /// (redis-server's hard pubsub output-buffer limit, 32 MB); past either, it is
  /// disconnected, as redis-server does.
  static constexpr std::size_t kCapacity = 1024;
  static constexpr std::size_t kMaxBytes = std::size_t{32} << 20;

  /// A mailbox with a new queue; the connection keeps `rx`.
  Mailbox();

  /// Appends `message`, just taken out of rx, to `out` (the connection's output); it counts
  /// in the backlog until written() says that output went out.
  void deliver(std::string& out, const std::string& message);
  /// The connection wrote its output: the messages delivered into it leave the backlog.
  void written();

  std::uint64_t id;                       ///< the connection's subscriber id
  spool::mpsc::Sender<std::string> tx;    ///< publishers' end of the queue
  spool::mpsc::Receiver<std::string> rx;  ///< the connection's end
  std::shared_ptr<Backlog> backlog = std::make_shared<Backlog>();  ///< shared with publishers

 private:
  using Ends = std::pair<spool::mpsc::Sender<std::string>, spool::mpsc::Receiver<std::string>>;
  Mailbox(std::uint64_t id, Ends ends);
  std::size_t in_output_ = 0;  // bytes delivered into the output since it was last written
};

/// The channels and their subscribers. Thread-safe (one lock).
class PubSub {
 public:
  /// Adds `box` to `channel`'s subscribers (no-op if it is one already).
  void subscribe(const std::string& channel, const Mailbox& box);
  /// Removes `box` from `channel`'s subscribers.
  void unsubscribe(const std::string& channel, const Mailbox& box);
  /// Queues `message` for each subscriber of `channel`: the count of subscribers (one whose
  /// mailbox is over a limit is counted, and disconnected).
  std::size_t publish(const std::string& channel, const std::string& message);

 private:
  // A subscriber as the channel knows it: the connection's id and its mailbox's ends.
  struct Subscriber {
    std::uint64_t id;
    spool::mpsc::Sender<std::string> tx;
    std::shared_ptr<Backlog> backlog;  // Mailbox::backlog
  };
  std::mutex mutex_;                                                   // guards channels_
  std::unordered_map<std::string, std::vector<Subscriber>> channels_;  // never empty vectors
};

}  // namespace mini_redis
