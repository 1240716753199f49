// RESP2, the Redis protocol: parsing a client's command from bytes received, and writing
// the replies. No I/O here (the server feeds it the bytes each connection has read), so the
// parser can be unit-tested and fuzzed on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mini_redis {

/// Malformed input: the server answers "-ERR Protocol error: <what>" and closes that
/// connection (as redis-server does).
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bounds on what one command may make the server hold (redis-server's defaults are
/// 512 MB and 2^31 - 1 elements; mini-redis is stricter by default).
struct Limits {
  std::size_t max_bulk = 64 * 1024 * 1024;  ///< bytes of one argument
  std::size_t max_args = 64 * 1024;         ///< arguments of one command
  std::size_t max_inline = 64 * 1024;       ///< bytes of an inline command's line
};

/// One command: its arguments, the first being the command's name.
using Command = std::vector<std::string>;

/// What parse_command found at the front of a buffer.
struct Parsed {
  /// False when the buffer holds only the beginning of a command (read more, then call
  /// again with the whole buffer).
  bool complete = false;
  /// Bytes of the buffer the command took (when complete).
  std::size_t consumed = 0;
  /// The arguments (when complete; empty for an empty inline line, which is skipped).
  Command args;
  /// Scratch: where each argument lies in the buffer (kept to save its allocation).
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  /// Where parsing of an incomplete command goes on at the next call, so that a command
  /// that arrives a few bytes at a time is read once, not once per read (as redis-server
  /// keeps its parse position). An array's: the offset of its next argument's header (0:
  /// its own header is not parsed yet); an inline line's: how far it was searched for its
  /// end. 0 after a complete command.
  std::size_t resume = 0;
  /// The argument count of the array being parsed (once its header was).
  std::size_t expected = 0;
  /// When incomplete: how many bytes from the front of the buffer the command takes at
  /// least, as far as its headers tell (through the argument that is not all here yet); 0
  /// when they tell nothing yet. A connection grows its buffer to this, not past it.
  std::size_t needed = 0;

  /// The heap bytes it keeps for the next command (its strings' and vectors' capacities): a
  /// connection that finds this large frees them, so that large commands do not pin memory.
  std::size_t storage() const noexcept;
};

/// Parses the command at the front of `buf`: an array of bulk strings
/// ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", what redis-cli and redis-benchmark send) or an inline
/// command ("PING\r\n" or "PING\n", words separated by blanks, quoted as redis-server quotes
/// them: "a \"b\"\x41" or 'it\'s'). Throws
/// ProtocolError for malformed input and for input beyond `limits` (checked before anything is
/// allocated).
Parsed parse_command(std::span<const char> buf, const Limits& limits);
/// The same, into `out`, whose storage it reuses: a connection that parses each command into
/// the same Parsed allocates nothing for arguments no longer than those it saw before. After
/// an incomplete result, the next call must pass the same bytes at the front of `buf` (more
/// may follow): it goes on where this one stopped. After a complete command or a
/// ProtocolError, the next call starts afresh.
void parse_command(std::span<const char> buf, const Limits& limits, Parsed& out);

/// Reply writers: each appends one RESP2 value to `out`.
void write_simple(std::string& out, std::string_view s);   ///< +s
void write_error(std::string& out, std::string_view msg);  ///< -msg (CR, LF made spaces)
void write_integer(std::string& out, std::int64_t v);      ///< :v
void write_bulk(std::string& out, std::string_view s);     ///< $len s
void write_null(std::string& out);                         ///< $-1 (nil)
void write_array_header(std::string& out, std::size_t n);  ///< *n, then n values
void write_null_array(std::string& out);                   ///< *-1

}  // namespace mini_redis
