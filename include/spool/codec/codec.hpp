// The Codec concept (Decoder, Encoder) that spool::codec::Framed reads and writes frames
// through, and the errors codecs throw.
#pragma once

#include <concepts>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "spool/codec/buffer.hpp"
#include "spool/config.hpp"

namespace spool::codec {

/// Input a codec cannot decode (or a frame it cannot encode). Where the connection stands
/// after one is the codec's to say; spool's codecs say it in their class comments.
class CodecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A frame longer than the codec's maximum. spool's codecs skip that frame and go on: the
/// next poll of the framed reader gives the frame after it (close the connection instead if
/// the peer cannot be trusted to go on).
class FrameTooLong : public CodecError {
 public:
  using CodecError::CodecError;
};

namespace detail {
template <class T>
inline constexpr bool is_optional_v = false;
template <class T>
inline constexpr bool is_optional_v<std::optional<T>> = true;
}  // namespace detail

/// A decoder: `c.decode(buf)` takes one frame from the front of `buf` (consuming its bytes)
/// and returns it, or returns nullopt, consuming nothing it will need again, when `buf`
/// holds no whole frame yet (the framed reader then reads more and calls it again with the
/// same bytes and the new ones behind them). It throws for input it cannot decode.
///
/// Optionally `c.prepare_read(buf)`, called before each read: it returns the free room the
/// read fills (`buf.prepare(n)`, not empty), so that the codec controls how the buffer grows
/// and shrinks (a memory budget, a large frame's memory given back); it may throw. Without
/// one, a read gets at least 4 KiB, more (up to 64 KiB) after reads that filled all their
/// room, less again after reads that did not (docs/codec.md, "Buffers").
///
/// Optionally `c.decode_eof(buf)`, called once the stream has ended, until it returns
/// nullopt: it gives what is left as frames or throws. Without one, decode is called and
/// bytes left after it are an error (a CodecError, the buffer cleared).
template <class C>
concept Decoder = requires(C& c, Buffer& buf) {
  {c.decode(buf)};
  requires detail::is_optional_v<decltype(c.decode(buf))>;
};

/// The frame type of a decoder.
template <Decoder C>
using frame_t = typename decltype(std::declval<C&>().decode(std::declval<Buffer&>()))::value_type;

/// An encoder of `Item`s: `c.encode(item, buf)` appends the item's bytes to `buf` (throwing,
/// having appended nothing, for an item it cannot encode).
template <class C, class Item>
concept Encoder = requires(C& c, const Item& item, Buffer& buf) {
  c.encode(item, buf);
};

/// c.decode_eof(buf) if the decoder has one, else the default the Decoder concept describes.
template <Decoder C>
std::optional<frame_t<C>> decode_eof(C& c, Buffer& buf) {
  if constexpr (requires {
                  { c.decode_eof(buf) } -> std::same_as<std::optional<frame_t<C>>>;
                }) {
    return c.decode_eof(buf);
  } else {
    auto frame = c.decode(buf);
    if (!frame && !buf.empty()) {
      const std::size_t left = buf.size();
      buf.clear();
      throw CodecError("spool::codec: the stream ended inside a frame (" + std::to_string(left) +
                       " bytes left undecoded)");
    }
    return frame;
  }
}

}  // namespace spool::codec
