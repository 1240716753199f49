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

Mailbox::Mailbox() : Mailbox(next_subscriber_id(), spool::mpsc::channel<std::string>(kCapacity)) {}

Mailbox::Mailbox(std::uint64_t id_, Ends ends)
    : id(id_), tx(std::move(ends.first)), rx(std::move(ends.second)) {}

void Mailbox::deliver(std::string& out, const std::string& message) {
  out += message;
  in_output_ += message.size();
}

void Mailbox::written() {
  if (in_output_ == 0) return;  // the output held no message: the shared count stays untouched
  backlog->bytes.fetch_sub(in_output_, std::memory_order_relaxed);  // see Backlog::bytes
  in_output_ = 0;
}

void PubSub::subscribe(const std::string& channel, const Mailbox& box) {
  std::lock_guard lock(mutex_);
  auto& subs = channels_[channel];
  const bool known =
      std::any_of(subs.begin(), subs.end(), [&](const Subscriber& s) { return s.id == box.id; });
  if (!known) subs.push_back(Subscriber{box.id, box.tx, box.backlog});
}

void PubSub::unsubscribe(const std::string& channel, const Mailbox& box) {
  std::lock_guard lock(mutex_);
  const auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  std::erase_if(it->second, [&](const Subscriber& s) { return s.id == box.id; });
  if (it->second.empty()) channels_.erase(it);
}

std::size_t PubSub::publish(const std::string& channel, const std::string& message) {
  std::string reply;
  write_array_header(reply, 3);
  write_bulk(reply, "message");
  write_bulk(reply, channel);
  write_bulk(reply, message);
  std::lock_guard lock(mutex_);
  const auto it = channels_.find(channel);
  if (it == channels_.end()) return 0;
  std::size_t delivered = 0;
  for (const Subscriber& s : it->second) {
    // Counted before it is queued, so that the connection, which subtracts it once it took
    // the message, never sees the count go below zero (Backlog::bytes).
    const std::size_t queued = s.backlog->bytes.fetch_add(reply.size(), std::memory_order_relaxed);
    if (queued + reply.size() > Mailbox::kMaxBytes) {
      ++delivered;  // counted, as redis-server counts a receiver it then disconnects
      overflow(*s.backlog);
      continue;
    }
    std::string copy = reply;
    switch (s.tx.try_send(std::move(copy))) {
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
