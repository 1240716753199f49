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
  /// (Mailbox::written). Relaxed: a count that publishes no data. The bound holds exactly
  /// with publishers on several channels at once: each queues only when the sum it added
  /// to stays within it.
  std::atomic<std::size_t> bytes{0};
};

/// A pub/sub message as its subscribers receive it (a RESP "message" reply): written once by
/// PUBLISH and shared, never copied, by every mailbox it goes to.
using Message = std::shared_ptr<const std::string>;

/// A message too large to copy into a connection's output: written from the shared buffer
/// after the first `at` bytes of that output.
struct SharedReply {
  std::size_t at;   ///< where it goes in the output's bytes
  Message message;  ///< what goes there
};

/// One subscribed connection's mailbox: the queue its messages go through (already written
/// as RESP "message" replies), and its Backlog.
struct Mailbox {
  /// How many messages may wait for a subscriber that reads slowly, and how many bytes
  /// (redis-server's hard pubsub output-buffer limit, 32 MB); past either, it is
  /// disconnected, as redis-server does.
  static constexpr std::size_t kCapacity = 1024;
  static constexpr std::size_t kMaxBytes = std::size_t{32} << 20;

  /// Messages from this size on are not copied into a connection's output (see deliver).
  static constexpr std::size_t kShareFrom = 16 * 1024;

  /// A mailbox with a new queue; the connection keeps `rx`.
  Mailbox();

  /// Appends `message`, just taken out of rx, to the connection's output: a copy in `out`
  /// when small, else an entry of `shared` (written from the publisher's buffer). It counts
  /// in the backlog until written() says that output went out.
  void deliver(std::string& out, std::vector<SharedReply>& shared, Message message);
  /// The connection wrote its output: the messages delivered into it leave the backlog.
  void written();

  std::uint64_t id;                   ///< the connection's subscriber id
  spool::mpsc::Sender<Message> tx;    ///< publishers' end of the queue
  spool::mpsc::Receiver<Message> rx;  ///< the connection's end
  std::shared_ptr<Backlog> backlog = std::make_shared<Backlog>();  ///< shared with publishers

 private:
  using Ends = std::pair<spool::mpsc::Sender<Message>, spool::mpsc::Receiver<Message>>;
  Mailbox(std::uint64_t id, Ends ends);
  std::size_t in_output_ = 0;  // bytes delivered into the output since it was last written
};

/// The channels and their subscribers. Thread-safe: one lock finds a channel, and each
/// channel has its own, which a PUBLISH holds only to queue its one shared message to each
/// subscriber (so that all of them see one channel's messages in one order).
class PubSub {
 public:
  /// Adds `box` to `channel`'s subscribers (no-op if it is one already).
  void subscribe(const std::string& channel, const Mailbox& box);
  /// Removes `box` from `channel`'s subscribers.
  void unsubscribe(const std::string& channel, const Mailbox& box);
  /// Queues `message` for each subscriber of `channel`, written once as a "message" reply
  /// that they all share: the count of subscribers (one whose mailbox is over a limit is
  /// counted, and disconnected).
  std::size_t publish(const std::string& channel, const std::string& message);

 private:
  // A subscriber as the channel knows it: the connection's id and its mailbox's ends.
  struct Subscriber {
    std::uint64_t id;
    spool::mpsc::Sender<Message> tx;
    std::shared_ptr<Backlog> backlog;  // Mailbox::backlog
  };
  // One channel's subscribers. A publisher may still hold a channel that the map dropped
  // (its last subscriber left): it finds no subscriber there.
  struct Channel {
    std::mutex mutex;                     // guards subscribers; taken after PubSub::mutex_
    std::vector<Subscriber> subscribers;  // not empty while in the map
  };
  std::mutex mutex_;                                                    // guards channels_
  std::unordered_map<std::string, std::shared_ptr<Channel>> channels_;  // never null
};

}  // namespace mini_redis
