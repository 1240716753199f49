// A connection's input buffer: the bytes read and not yet parsed.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "memory_budget.hpp"

namespace mini_redis {

/// The bytes a connection has read and not yet parsed. It holds kBase bytes; a command that
/// does not fit grows it (up to a limit of its own, each byte past kBase taken from a budget
/// that every connection shares), and once the large command is parsed it goes back to
/// kBase, so that one large command does not hold its memory for as long as the connection
/// lives. Not thread-safe (one connection's).
class InputBuffer {
 public:
  /// The usual size: what a connection holds between large commands.
  static constexpr std::size_t kBase = 16 * 1024;

  /// What make_room found.
  enum class Room {
    kReady,           ///< space() is not empty
    kOverOwnLimit,    ///< full, and growing would pass `max`
    kOverSharedLimit  ///< full, and growing would pass the shared budget
  };

  /// An empty buffer of kBase bytes that may grow to `max` bytes, the growth taken from
  /// `budget` (which must outlive it).
  InputBuffer(std::size_t max, MemoryBudget& budget);
  /// Gives its growth back to the budget.
  ~InputBuffer();
  InputBuffer(const InputBuffer&) = delete;
  InputBuffer& operator=(const InputBuffer&) = delete;

  /// The bytes read and not yet parsed.
  std::span<const char> unparsed() const noexcept { return {data_.get() + begin_, end_ - begin_}; }
  /// The first `n` unparsed bytes were parsed.
  void consume(std::size_t n) noexcept { begin_ += n; }
  /// Makes space() not empty for the next read, or says why it cannot. `needed`: how many
  /// bytes the unparsed command takes at least (Parsed::needed; 0: not known). Shrinks the
  /// buffer back to kBase once what it holds, and what its command needs, fit there.
  Room make_room(std::size_t needed);
  /// Where the next read goes (after make_room).
  std::span<char> space() noexcept { return {data_.get() + end_, capacity_ - end_}; }
  /// `n` bytes were read into space().
  void filled(std::size_t n) noexcept { end_ += n; }
  /// Its size now.
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  // Moves the unparsed bytes to the front of a new buffer of `capacity` bytes.
  void reallocate(std::size_t capacity);

  std::size_t max_;
  MemoryBudget& budget_;  // holds capacity_ - kBase of it
  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0;  // the first byte not yet parsed
  std::size_t end_ = 0;    // one past the last byte read
};

}  // namespace mini_redis
