// spool::codec::LengthDelimitedCodec: frames that are a length field and that many bytes.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "spool/codec/codec.hpp"

namespace spool::codec {

/// Frames as [length][payload]: an unsigned length field of 1, 2, 4 or 8 bytes, big- or
/// little-endian, that counts the payload's bytes. A frame is its payload, as a std::string;
/// encode writes the field and the payload. A frame whose length is over max_frame throws
/// FrameTooLong once, its payload is skipped as it arrives (never buffered), and the
/// reader goes on with the frame after it. At the end of the stream, a partial frame is a
/// CodecError.
class LengthDelimitedCodec {
 public:
  /// The codec's settings.
  struct Options {
    std::size_t field_width = 4;                   ///< bytes of the length field: 1, 2, 4, 8
    std::endian byte_order = std::endian::big;     ///< of the length field
    std::size_t max_frame = std::size_t{8} << 20;  ///< the longest payload (8 MiB)
  };

  /// 4-byte big-endian lengths, payloads of at most 8 MiB (tokio's defaults).
  LengthDelimitedCodec() = default;
  /// Throws std::invalid_argument for a field width other than 1, 2, 4 or 8.
  explicit LengthDelimitedCodec(Options options) : options_(options) {
    const std::size_t w = options.field_width;
    if (w != 1 && w != 2 && w != 4 && w != 8) {
      throw std::invalid_argument(
          "spool::codec::LengthDelimitedCodec: the length field must be 1, 2, 4 or 8 bytes wide "
          "(got " +
          std::to_string(w) + ")");
    }
  }

  /// Its settings.
  const Options& options() const noexcept { return options_; }

  /// The next frame's payload (see the class comment).
  std::optional<std::string> decode(Buffer& buf) {
    if (skipping_ > 0) {
      const std::size_t n = std::min(skipping_, buf.size());
      buf.consume(n);
      skipping_ -= n;
      if (skipping_ > 0) return std::nullopt;
    }
    const std::size_t w = options_.field_width;
    const std::string_view held = buf.view();
    if (held.size() < w) return std::nullopt;
    const std::uint64_t length = read_length(held.substr(0, w));
    if (length > options_.max_frame) {
      buf.consume(w);
      skipping_ = static_cast<std::size_t>(length);
      throw FrameTooLong("spool::codec::LengthDelimitedCodec: a frame of " +
                         std::to_string(length) + " bytes, over the maximum of " +
                         std::to_string(options_.max_frame) + " (it is skipped)");
    }
    if (held.size() - w < length) {
      buf.prepare(w + length - held.size());  // room for the rest: one allocation, not several
      return std::nullopt;
    }
    std::string payload(held.substr(w, static_cast<std::size_t>(length)));
    buf.consume(w + static_cast<std::size_t>(length));
    return payload;
  }
  /// At the end of the stream: the next whole frame; a partial one is a CodecError.
  std::optional<std::string> decode_eof(Buffer& buf) {
    if (auto frame = decode(buf)) return frame;
    if (buf.empty() && skipping_ == 0) return std::nullopt;
    const std::size_t left = buf.size();
    buf.clear();
    skipping_ = 0;
    throw CodecError("spool::codec::LengthDelimitedCodec: the stream ended inside a frame (" +
                     std::to_string(left) + " bytes of it received)");
  }
  /// Appends the length field and `payload`. Throws FrameTooLong, appending nothing, for a
  /// payload over max_frame or over what the field can count.
  void encode(std::string_view payload, Buffer& buf) {
    const std::size_t w = options_.field_width;
    const std::uint64_t field_max = w == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * w)) - 1;
    if (payload.size() > options_.max_frame || payload.size() > field_max) {
      throw FrameTooLong("spool::codec::LengthDelimitedCodec::encode: a frame of " +
                         std::to_string(payload.size()) + " bytes, over the maximum of " +
                         std::to_string(std::min<std::uint64_t>(options_.max_frame, field_max)));
    }
    const std::span<char> room = buf.prepare(w + payload.size());
    write_length(payload.size(), room.first(w));
    std::copy(payload.begin(), payload.end(), room.begin() + static_cast<std::ptrdiff_t>(w));
    buf.commit(w + payload.size());
  }

 private:
  std::uint64_t read_length(std::string_view field) const noexcept {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < field.size(); ++i) {
      const std::size_t at = options_.byte_order == std::endian::big ? i : field.size() - 1 - i;
      v = (v << 8) | static_cast<unsigned char>(field[at]);
    }
    return v;
  }
  void write_length(std::uint64_t v, std::span<char> field) const noexcept {
    for (std::size_t i = 0; i < field.size(); ++i) {
      const std::size_t at = options_.byte_order == std::endian::big ? field.size() - 1 - i : i;
      field[at] = static_cast<char>(v & 0xff);
      v >>= 8;
    }
  }

  Options options_;
  std::size_t skipping_ = 0;  // payload bytes of an over-long frame still to skip
};

}  // namespace spool::codec
