// One client connection of mini-redis: reads commands (pipelined or not), runs them, writes
// the replies of everything it read in one write (up to 64 KiB of replies at a time), and
// delivers pub/sub messages.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "client_stream.hpp"
#include "pubsub.hpp"
#include "resp.hpp"
#include "resp_codec.hpp"
#include "server.hpp"
#include "spool/net.hpp"

namespace mini_redis {

/// Serves one connection until the peer closes it, sends QUIT or malformed input, stays idle
/// past the idle timeout, or the server shuts down (after the commands already read).
class Connection {
 public:
  /// A connection over `stream` (TCP or TLS), sharing `state` (which must outlive it).
  Connection(ClientStream stream, ServerState& state);
  /// Unsubscribes from every channel.
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Serves the connection (see the class comment). Throws std::system_error when the socket
  /// fails (a peer that resets it).
  spool::Task<void> run();
  /// Ends the stream: over TLS, sends close_notify, unless run() gave up a write the client
  /// did not take (close_notify would wait behind it).
  spool::Task<void> shutdown();

 private:
  // What run_buffered leaves to do: read more; write out_, then close; write out_, then
  // run the commands still buffered.
  enum class After { kContinue, kClose, kWriteFirst };
  enum class Woke { kRead, kMessages, kOverflow, kShutdown, kIdle };

  // Runs `first` (a command just read, if any), then the complete commands buffered,
  // appending the replies to out_, until out_ holds kRepliesBeforeWrite bytes.
  After run_buffered(const Command* first);
  After execute(const Command& args);
  void subscribe(const Command& args);
  void unsubscribe(const Command& args);
  void write_subscription(std::string_view kind, const std::string* channel);
  bool deliver_queued_messages();
  void deliver(Message message);
  // out_ and shared_out_ were written: empties them.
  void clear_output();
  // Before a wait for the client: frees out_'s and the codec's storage when they grew large.
  void release_large_buffers();

  ServerState& state_;
  bool write_given_up_ = false;  // run() ended on a write the client did not take
  // The client's stream (TCP or TLS), read as commands (written through in_.get()).
  spool::codec::FramedRead<ClientStream, RespCodec> in_;
  std::string out_;                      // replies not yet written
  std::vector<SharedReply> shared_out_;  // large messages, written between out_'s bytes
  std::unique_ptr<Mailbox> mailbox_;     // made by the first SUBSCRIBE
  std::set<std::string> channels_;       // subscribed to; not empty: in subscriber mode
  std::vector<Message> messages_;        // received from the mailbox, to write
};

}  // namespace mini_redis
