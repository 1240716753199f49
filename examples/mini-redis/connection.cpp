#include "connection.hpp"

#include <algorithm>
#include <optional>
#include <span>

#include "commands.hpp"
#include "spool/core/poll_fn.hpp"
#include "spool/time.hpp"

namespace mini_redis {

namespace {

constexpr std::size_t kMessagesPerWake = 64;
// Replies held before they are written: the commands still buffered wait until these are
// sent, so that a client pipelining many GETs of a large value cannot make the server hold
// all their replies at once. (The last command run may take it past this by one reply.)
constexpr std::size_t kRepliesBeforeWrite = 64 * 1024;
// What a connection keeps for its output and its parsed arguments while it waits for its
// client: past this, a large reply's or command's memory is freed then, not kept for as
// long as the connection lives (a check per read; a free only after a large one). A
// pipeline that goes on without a read keeps reusing it.
constexpr std::size_t kKeepOutput = 2 * kRepliesBeforeWrite;

bool allowed_when_subscribed(std::string_view name) {
  return name == "subscribe" || name == "unsubscribe" || name == "ping" || name == "quit";
}

}  // namespace

Connection::Connection(ClientStream stream, ServerState& state)
    : state_(state),
      in_(std::move(stream),
          RespCodec(state.config.limits, state.config.max_query, state.query_budget)) {}

Connection::~Connection() {
  for (const std::string& channel : channels_) state_.pubsub.unsubscribe(channel, *mailbox_);
}

spool::Task<void> Connection::run() {
  const auto idle_timeout = state_.config.idle_timeout;
  // The idle timer is armed once and moved only when it fires early: a read just notes the
  // time, so that a busy connection does not touch the timer wheel at each command.
  std::optional<spool::Sleep> idle;
  if (idle_timeout.count() > 0) idle.emplace(spool::sleep(idle_timeout));
  auto last_read = spool::time::now();
  auto stop = state_.shutdown.cancelled();
  // A command read with the wait below, run first by run_buffered.
  std::optional<std::reference_wrapper<const Command>> read;
  // Malformed input or a full buffer, met by the read: answered, then the connection closes.
  std::optional<std::string> refusal;
  for (;;) {
    After after = After::kClose;
    if (refusal) {
      write_error(out_, *refusal);
    } else {
      after = run_buffered(read ? &read->get() : nullptr);
    }
    read.reset();
    // A subscriber whose backlog went over a limit is closed at once, also while its
    // connection waits for it to read (Backlog::overflow).
    std::optional<spool::Notified> overflow;
    if (mailbox_) overflow.emplace(mailbox_->backlog->overflow.notified());
    if (!out_.empty() || !shared_out_.empty()) {
      // A client that stops reading its replies fills the socket's send buffer and the
      // write waits: it gives up at the shutdown, or when it has not finished within the
      // idle timeout, so that such a client cannot hold its connection slot (nor the
      // shutdown) for ever. The deadline is armed only when a write waits. out_ goes in
      // one write, or in pieces around the shared messages.
      std::optional<spool::Sleep> deadline;
      std::size_t from = 0;
      for (std::size_t i = 0; i <= shared_out_.size(); ++i) {
        const bool last = i == shared_out_.size();
        const std::size_t to = last ? out_.size() : shared_out_[i].at;
        const std::string_view own = std::string_view(out_).substr(from, to - from);
        const std::string_view shared = last ? std::string_view() : *shared_out_[i].message;
        from = to;
        for (const std::string_view bytes : {own, shared}) {
          if (bytes.empty()) continue;
          auto write = in_.get().write_all(bytes);
          auto written = spool::poll_fn([&](spool::Context& cx) -> spool::Poll<bool> {
            if (write.poll(cx).is_ready()) return true;
            if (stop.poll(cx).is_ready()) return false;
            if (overflow && overflow->poll(cx).is_ready()) return false;
            if (idle_timeout.count() > 0) {
              if (!deadline) deadline.emplace(spool::sleep(idle_timeout));
              if (deadline->poll(cx).is_ready()) return false;
            }
            return spool::pending;
          });
          if (!co_await written) {
            write_given_up_ = true;
            co_return;
          }
        }
      }
      clear_output();
    }
    if (after == After::kClose) co_return;
    if (after == After::kWriteFirst) continue;  // commands wait in in_: no read yet

    release_large_buffers();
    bool ended = false;  // the peer closed its side
    auto next = spool::next(in_);
    std::optional<spool::mpsc::RecvMany<Message>> recv;
    if (mailbox_) recv.emplace(mailbox_->rx.recv_many(messages_, kMessagesPerWake));
    // Data first: a connection finishes what it was sent before it notices the shutdown.
    auto wait = spool::poll_fn([&](spool::Context& cx) -> spool::Poll<Woke> {
      if (auto p = next.poll(cx); p.is_ready()) {
        read = std::move(p).value();
        ended = !read;
        return Woke::kRead;
      }
      if (recv && recv->poll(cx).is_ready()) return Woke::kMessages;
      if (overflow && overflow->poll(cx).is_ready()) return Woke::kOverflow;
      if (stop.poll(cx).is_ready()) return Woke::kShutdown;
      if (idle && idle->poll(cx).is_ready()) return Woke::kIdle;
      return spool::pending;
    });
    Woke woke = Woke::kRead;
    try {
      woke = co_await wait;
    } catch (const ProtocolError& e) {
      refusal = std::string("ERR Protocol error: ") + e.what();
    } catch (const QueryBufferFull& e) {
      refusal = e.what();
    }
    switch (woke) {
      case Woke::kRead:
        if (ended) co_return;
        last_read = spool::time::now();
        break;
      case Woke::kMessages:
        if (mailbox_->backlog->overflowed.load(std::memory_order_relaxed)) co_return;  // too slow
        for (Message& m : messages_) deliver(std::move(m));
        messages_.clear();
        break;
      case Woke::kOverflow:  // the subscriber fell too far behind
      case Woke::kShutdown:
        co_return;
      case Woke::kIdle:
        if (!channels_.empty()) {  // a subscriber waits for messages: it is never idle
          idle->reset(spool::time::now() + idle_timeout);
        } else if (spool::time::now() - last_read >= idle_timeout) {
          co_return;
        } else {
          idle->reset(last_read + idle_timeout);
        }
        break;
    }
  }
}

spool::Task<void> Connection::shutdown() {
  if (!write_given_up_) co_await in_.get().shutdown();
}

Connection::After Connection::run_buffered(const Command* first) {
  if (first != nullptr && execute(*first) == After::kClose) return After::kClose;
  for (;;) {
    if (out_.size() >= kRepliesBeforeWrite) return After::kWriteFirst;
    std::optional<std::reference_wrapper<const Command>> command;
    try {
      command = in_.try_next();
    } catch (const ProtocolError& e) {
      write_error(out_, std::string("ERR Protocol error: ") + e.what());
      return After::kClose;
    }
    if (!command) return After::kContinue;
    if (execute(command->get()) == After::kClose) return After::kClose;
  }
}

void Connection::clear_output() {
  out_.clear();
  shared_out_.clear();
  if (mailbox_) mailbox_->written();
}

void Connection::release_large_buffers() {
  if (out_.capacity() > kKeepOutput) std::string().swap(out_);
  in_.codec().release_large_storage();
}

void Connection::deliver(Message message) {
  mailbox_->deliver(out_, shared_out_, std::move(message));
}

Connection::After Connection::execute(const Command& args) {
  if (mailbox_ && !deliver_queued_messages()) return After::kClose;
  const std::string name = lowercase(args[0]);
  // As in redis-server, a command with the wrong number of arguments gets that error first.
  if (!channels_.empty() && !allowed_when_subscribed(name) &&
      (name == "publish" ? args.size() == 3 : keyspace_command_takes(name, args.size()))) {
    write_error(out_, "ERR Can't execute '" + name +
                          "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
                          "allowed in this context");
    return After::kContinue;
  }
  if (name == "quit") {
    write_simple(out_, "OK");
    return After::kClose;
  }
  if (name == "subscribe") {
    if (args.size() < 2) {
      write_wrong_arity(out_, name);
    } else {
      subscribe(args);
    }
  } else if (name == "unsubscribe") {
    unsubscribe(args);
  } else if (name == "publish") {
    if (args.size() != 3) {
      write_wrong_arity(out_, name);
    } else {
      write_integer(out_, static_cast<std::int64_t>(state_.pubsub.publish(args[1], args[2])));
    }
  } else if (name == "ping" && !channels_.empty()) {
    if (args.size() > 2) {
      write_wrong_arity(out_, name);
    } else {  // in subscriber mode a PING is answered as a message is
      write_array_header(out_, 2);
      write_bulk(out_, "pong");
      write_bulk(out_, args.size() == 2 ? std::string_view(args[1]) : std::string_view());
    }
  } else if (!run_keyspace_command(state_.keys, name, args, out_)) {
    write_unknown_command(out_, args);
  }
  return After::kContinue;
}

// Messages published before the command being run were, in redis-server, written before its
// reply: appending the queued ones first keeps that order. False when the subscriber fell
// too far behind (its mailbox went over a limit): it is disconnected.
bool Connection::deliver_queued_messages() {
  if (mailbox_->backlog->overflowed.load(std::memory_order_relaxed)) return false;
  while (auto m = mailbox_->rx.try_recv()) deliver(std::move(*m));
  return true;
}

void Connection::subscribe(const Command& args) {
  if (!mailbox_) mailbox_ = std::make_unique<Mailbox>();
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (channels_.insert(args[i]).second) state_.pubsub.subscribe(args[i], *mailbox_);
    write_subscription("subscribe", &args[i]);
  }
}

// UNSUBSCRIBE [channel ...]: without a channel, from every one.
void Connection::unsubscribe(const Command& args) {
  std::vector<std::string> which(args.begin() + 1, args.end());
  if (which.empty()) which.assign(channels_.begin(), channels_.end());
  if (which.empty()) write_subscription("unsubscribe", nullptr);
  for (const std::string& channel : which) {
    if (channels_.erase(channel) != 0) state_.pubsub.unsubscribe(channel, *mailbox_);
    write_subscription("unsubscribe", &channel);
  }
}

// [kind, channel (nil when none), the count of channels subscribed to now].
void Connection::write_subscription(std::string_view kind, const std::string* channel) {
  write_array_header(out_, 3);
  write_bulk(out_, kind);
  if (channel == nullptr) {
    write_null(out_);
  } else {
    write_bulk(out_, *channel);
  }
  write_integer(out_, static_cast<std::int64_t>(channels_.size()));
}

}  // namespace mini_redis
