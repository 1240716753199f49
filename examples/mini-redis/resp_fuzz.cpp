// libFuzzer target: parse_command must, for any bytes, either ask for more, give a command
// that consumed a prefix of the input, or throw ProtocolError; never crash, never read
// outside the buffer, never hold more than the limits allow. And it must give the same
// result when the bytes arrive a few at a time into one reused Parsed (as a connection
// feeds it) as when they are all there at once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "resp.hpp"

namespace {

const mini_redis::Limits kLimits{1 << 16, 1 << 10, 1 << 12};

// What parse_command gave for `buf`, into `p`; nullopt: it threw ProtocolError.
std::optional<bool> parse(std::span<const char> buf, mini_redis::Parsed& p) {
  try {
    mini_redis::parse_command(buf, kLimits, p);
    return p.complete;
  } catch (const mini_redis::ProtocolError&) {
    return std::nullopt;
  }
}

// Parses the front of `buf` as a connection would while it arrives `step` bytes per read.
std::optional<bool> parse_arriving(std::span<const char> buf, std::size_t step,
                                   mini_redis::Parsed& p) {
  for (std::size_t n = std::min(step, buf.size());; n = std::min(n + step, buf.size())) {
    const std::optional<bool> r = parse(buf.first(n), p);
    if (!r || *r || n == buf.size()) return r;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t step = 1 + data[0] % 8;  // the first byte: how the rest arrives
  std::span<const char> buf(reinterpret_cast<const char*>(data) + 1, size - 1);
  mini_redis::Parsed reused;  // as a connection keeps one
  // Parse command after command, as the server does with a pipelined buffer.
  while (!buf.empty()) {
    mini_redis::Parsed whole;
    const std::optional<bool> r = parse(buf, whole);
    if (parse_arriving(buf, step, reused) != r) std::abort();
    if (!r || !*r) break;
    if (whole.consumed == 0 || whole.consumed > buf.size() ||
        whole.args.size() > kLimits.max_args || reused.consumed != whole.consumed ||
        reused.args != whole.args) {
      std::abort();
    }
    for (const auto& a : whole.args) {
      if (a.size() > kLimits.max_bulk) std::abort();
    }
    buf = buf.subspan(whole.consumed);
  }
  return 0;
}
