// The property the codec fuzz target and codec_tests (SplitPoints) check: a framed reader gives the
// same frames and errors, in the same order, however its input is cut into reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "spool/codec.hpp"
#include "spool/core/context.hpp"
#include "spool/core/waker.hpp"
#include "support/scripted_bytes.hpp"

namespace spool_codec_test {

// Every outcome of reading `framed` to its end: each frame as "=" and its bytes, each
// codec error as "!" and its class (at most `max_errors` of them, so that a codec that
// throws without end is caught rather than looped on). Polled by hand with a no-op waker,
// not by a runtime, so that the fuzz target needs no spool library. A ScriptedBytes read
// pends at most once, so a poll that pends `max_pendings` times in a row lost a read.
template <class F>
std::vector<std::string> outcomes(F& framed, std::size_t max_errors = 1000,
                                  std::size_t max_pendings = 1'000'000) {
  std::vector<std::string> out;
  std::size_t errors = 0;
  const spool::Waker waker = spool::Waker::noop();
  spool::Context cx(waker);
  for (;;) {
    try {
      std::size_t pendings = 0;
      auto p = framed.poll_next(cx);
      while (!p.is_ready() && ++pendings < max_pendings) p = framed.poll_next(cx);
      if (!p.is_ready()) {
        out.push_back("!pending without end");
        return out;
      }
      auto frame = std::move(p).value();
      if (!frame) return out;
      out.push_back("=" + *frame);
    } catch (const spool::codec::FrameTooLong&) {
      out.push_back("!FrameTooLong");
    } catch (const spool::codec::CodecError&) {
      out.push_back("!CodecError");
    }
    if (out.back()[0] == '!' && ++errors > max_errors) {
      out.push_back("!endless errors");
      return out;
    }
  }
}

// The codec a fuzz input's first byte picks: a LinesCodec or a LengthDelimitedCodec of each
// field width and byte order, all with small maxima so that over-long frames are common.
inline std::vector<std::string> decode_with(std::uint8_t pick, const std::string& input,
                                            const std::set<std::size_t>& cuts, bool pend) {
  spool_test::ScriptedBytes bytes(input, cuts);
  bytes.pend_each(pend);
  if (pick % 9 == 0) {
    spool::codec::FramedRead framed(std::move(bytes), spool::codec::LinesCodec(8));
    return outcomes(framed);
  }
  spool::codec::LengthDelimitedCodec::Options o;
  o.field_width = std::size_t{1} << (pick % 4);
  o.byte_order = pick % 9 < 5 ? std::endian::big : std::endian::little;
  o.max_frame = 12;
  spool::codec::FramedRead framed(std::move(bytes), spool::codec::LengthDelimitedCodec(o));
  return outcomes(framed);
}

// Checks the property for one input: [pick][cut count k][k cut offsets][bytes]. False when
// reading it in pieces gave other outcomes than reading it whole, or errors without end.
inline bool same_outcomes_when_split(std::span<const std::uint8_t> data) {
  if (data.size() < 2) return true;
  const std::uint8_t pick = data[0];
  const std::size_t k = std::min<std::size_t>(data[1], data.size() - 2);
  const std::string input(reinterpret_cast<const char*>(data.data()) + 2 + k, data.size() - 2 - k);
  std::set<std::size_t> cuts;
  for (std::size_t i = 0; i < k; ++i) cuts.insert(data[2 + i] % (input.size() + 1));
  const std::vector<std::string> whole = decode_with(pick, input, {}, false);
  if (!whole.empty() &&
      (whole.back() == "!endless errors" || whole.back() == "!pending without end"))
    return false;
  return whole == decode_with(pick, input, cuts, pick % 2 == 1);
}

}  // namespace spool_codec_test
