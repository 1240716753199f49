// RespCodec: mini-redis's RESP parser as a spool codec (docs/codec.md), through which each
// connection reads its commands: a spool::codec::FramedRead<ClientStream, RespCodec>.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <span>

#include "memory_budget.hpp"
#include "resp.hpp"
#include "spool/codec.hpp"

namespace mini_redis {

/// The input buffer could not grow for the command it holds: past the connection's own
/// limit (--max-query) or past what all connections share (--max-query-total). The server
/// answers what() as an error and closes the connection.
class QueryBufferFull : public spool::codec::CodecError {
 public:
  using spool::codec::CodecError::CodecError;
};

/// Decodes commands (parse_command) from a connection's input buffer and manages that
/// buffer's memory: it holds kBase bytes; a command that does not fit grows it (to what the
/// command needs, or twice its size, up to `max`, each byte past kBase taken from the shared
/// `budget`), and once the large command is decoded it goes back to kBase, so that one large
/// command does not hold its memory for as long as the connection lives. A frame is the
/// command's arguments, valid until the next decode (their strings are reused). Not
/// thread-safe (one connection's).
class RespCodec {
 public:
  /// The usual size of a connection's input buffer.
  static constexpr std::size_t kBase = 16 * 1024;

  /// Commands within `limits`, buffered in at most `max` bytes, the growth taken from
  /// `budget` (which must outlive it).
  RespCodec(const Limits& limits, std::size_t max, MemoryBudget& budget) noexcept
      : limits_(limits), max_(max), budget_(&budget) {}
  /// Gives the buffer's growth back to the budget.
  ~RespCodec() { budget_->give_back(taken_); }
  RespCodec(RespCodec&& other) noexcept;
  RespCodec& operator=(RespCodec&&) = delete;

  /// The next command of `buf` (empty inline lines skipped); throws ProtocolError for
  /// malformed input (the Decoder concept).
  std::optional<std::reference_wrapper<const Command>> decode(spool::codec::Buffer& buf);
  /// At the client's end: the commands still whole in `buf`, then nullopt, a partial command
  /// dropped (a client that closed mid-command just goes; the default would throw).
  std::optional<std::reference_wrapper<const Command>> decode_eof(spool::codec::Buffer& buf);
  /// The room of the next read (see the class comment); throws QueryBufferFull.
  std::span<char> prepare_read(spool::codec::Buffer& buf);
  /// Frees the parsed arguments' storage when it grew large (a check per read: large
  /// commands do not pin memory between them).
  void release_large_storage();

 private:
  Limits limits_;
  std::size_t max_;
  MemoryBudget* budget_;
  std::size_t taken_ = 0;  // of budget_: the buffer's capacity past kBase
  Parsed parsed_;          // each command in turn (its strings are reused)
};

}  // namespace mini_redis
