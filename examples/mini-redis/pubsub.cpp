#include "pubsub.hpp"

#include <algorithm>

#include "resp.hpp"

namespace mini_redis {

namespace {

std::uint64_t next_subscriber_id() {
  // Protocol: written (fetch_add, relaxed) by every thread that makes a Mailbox, read by
  // nothing else. Relaxed: the RMW alone makes the ids distinct; no other data is published
  // with an id, so no read pairs with it.
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// Marks `backlog` overflowed; the first to do so wakes its connection (Backlog::overflow).
void overflow(Backlog& backlog) {
  if (!backlog.overflowed.exchange(true, std::memory_order_relaxed)) backlog.overflow.notify_one();
}

}  // namespace

Mailbox::Mailbox() : Mailbox(next_subscriber_id(), spool::mpsc::channel<Message>(kCapacity)) {}

Mailbox::Mailbox(std::uint64_t id_, Ends ends)
    : id(id_), tx(std::move(ends.first)), rx(std::move(ends.second)) {}

void Mailbox::deliver(std::string& out, std::vector<SharedReply>& shared, Message message) {
  in_output_ += message->size();
  if (message->size() < kShareFrom) {
    out += *message;
  } else {
    shared.push_back(SharedReply{out.size(), std::move(message)});
  }
}

void Mailbox::written() {
  if (in_output_ == 0) return;  // the output held no message: the shared count stays untouched
  backlog->bytes.fetch_sub(in_output_, std::memory_order_relaxed);  // see Backlog::bytes
  in_output_ = 0;
}

void PubSub::subscribe(const std::string& channel, const Mailbox& box) {
  std::lock_guard lock(mutex_);
  auto& found = channels_[channel];
  if (!found) found = std::make_shared<Channel>();
  std::lock_guard channel_lock(found->mutex);
  auto& subs = found->subscribers;
  const bool known =
      std::any_of(subs.begin(), subs.end(), [&](const Subscriber& s) { return s.id == box.id; });
  if (!known) subs.push_back(Subscriber{box.id, box.tx, box.backlog});
}

void PubSub::unsubscribe(const std::string& channel, const Mailbox& box) {
  std::lock_guard lock(mutex_);
  const auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  const std::shared_ptr<Channel> held = it->second;  // outlives its lock, which it owns
  std::lock_guard channel_lock(held->mutex);
  std::erase_if(held->subscribers, [&](const Subscriber& s) { return s.id == box.id; });
  if (held->subscribers.empty()) channels_.erase(it);
}

std::size_t PubSub::publish(const std::string& channel, const std::string& message) {
  auto written = std::make_shared<std::string>();
  write_array_header(*written, 3);
  write_bulk(*written, "message");
  write_bulk(*written, channel);
  write_bulk(*written, message);
  const Message reply = std::move(written);
  std::shared_ptr<Channel> subscribers;
  {
    std::lock_guard lock(mutex_);
    const auto it = channels_.find(channel);
    if (it == channels_.end()) return 0;
    subscribers = it->second;
  }
  std::lock_guard lock(subscribers->mutex);
  std::size_t delivered = 0;
  for (const Subscriber& s : subscribers->subscribers) {
    // Counted before it is queued, so that the connection, which subtracts it once it took
    // the message, never sees the count go below zero (Backlog::bytes).
    const std::size_t queued = s.backlog->bytes.fetch_add(reply->size(), std::memory_order_relaxed);
    if (queued + reply->size() > Mailbox::kMaxBytes) {
      ++delivered;  // counted, as redis-server counts a receiver it then disconnects
      overflow(*s.backlog);
      continue;
    }
    switch (s.tx.try_send(Message(reply))) {
      case spool::mpsc::TrySendResult::kSent:
        ++delivered;
        break;
      case spool::mpsc::TrySendResult::kFull:
        ++delivered;
        overflow(*s.backlog);
        break;
      case spool::mpsc::TrySendResult::kClosed:
        break;  // the connection is going away; it unsubscribes as it does
    }
  }
  return delivered;
}

}  // namespace mini_redis
