// spool::codec::LinesCodec: frames that are lines ending in "\n".
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "spool/codec/codec.hpp"

namespace spool::codec {

/// Lines: a frame is the bytes before a "\n" (a "\r" before it dropped too), as a
/// std::string; encode appends a line and its "\n". A line longer than max_length() bytes
/// (the "\n" not counted) throws FrameTooLong once; the line is then skipped up to its "\n"
/// and the reader goes on with the next one, as tokio's LinesCodec does. At the end of the
/// stream, bytes after the last "\n" are a last line. A line is searched for its end once,
/// however many reads it arrives in.
class LinesCodec {
 public:
  /// Lines of any length: only for a trusted peer, since one that never sends "\n" makes
  /// the buffer grow without end.
  LinesCodec() = default;
  /// Lines of at most `max_length` bytes.
  explicit LinesCodec(std::size_t max_length) noexcept : max_length_(max_length) {}

  /// The longest line decoded.
  std::size_t max_length() const noexcept { return max_length_; }

  /// The next line of `buf` (see the class comment).
  std::optional<std::string> decode(Buffer& buf) {
    for (;;) {
      const std::string_view held = buf.view();
      // A line may take max_length bytes and its "\n": no need to look further.
      const std::size_t search_end = max_length_ < held.size() ? max_length_ + 1 : held.size();
      const std::size_t newline = held.substr(0, search_end).find('\n', searched_);
      if (discarding_) {
        buf.consume(newline == std::string_view::npos ? search_end : newline + 1);
        searched_ = 0;
        discarding_ = newline == std::string_view::npos;
        if (buf.empty()) return std::nullopt;
        continue;
      }
      if (newline != std::string_view::npos) {
        std::string line = take_line(held, newline);
        buf.consume(newline + 1);
        searched_ = 0;
        return line;
      }
      if (held.size() > max_length_) {
        discarding_ = true;
        searched_ = 0;
        throw FrameTooLong("spool::codec::LinesCodec: a line longer than " +
                           std::to_string(max_length_) + " bytes (it is skipped)");
      }
      searched_ = search_end;
      return std::nullopt;
    }
  }
  /// At the end of the stream: the next line, then what follows the last "\n" as a line.
  std::optional<std::string> decode_eof(Buffer& buf) {
    if (auto line = decode(buf)) return line;
    const std::string_view held = buf.view();
    if (held.empty() || held == "\r") {
      buf.clear();
      searched_ = 0;
      return std::nullopt;
    }
    std::string line = take_line(held, held.size());
    buf.clear();
    searched_ = 0;
    return line;
  }
  /// Appends `line` and "\n". Throws CodecError, appending nothing, for a line holding a
  /// "\n" (it would arrive as two).
  void encode(std::string_view line, Buffer& buf) {
    if (line.find('\n') != std::string_view::npos) {
      throw CodecError("spool::codec::LinesCodec::encode: the line holds a \"\\n\"");
    }
    const std::span<char> room = buf.prepare(line.size() + 1);
    std::copy(line.begin(), line.end(), room.begin());
    room[line.size()] = '\n';
    buf.commit(line.size() + 1);
  }

 private:
  // The line before `end`, without its "\r".
  static std::string take_line(std::string_view held, std::size_t end) {
    if (end > 0 && held[end - 1] == '\r') --end;
    return std::string(held.substr(0, end));
  }

  std::size_t max_length_ = std::numeric_limits<std::size_t>::max();
  std::size_t searched_ = 0;  // the front bytes already searched for "\n", in vain
  bool discarding_ = false;   // skipping the rest of an over-long line
};

}  // namespace spool::codec
