// libFuzzer target: parse_command must, for any bytes, either ask for more, give a command
// that consumed a prefix of the input, or throw ProtocolError; never crash, never read
// outside the buffer, never hold more than the limits allow.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "resp.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const mini_redis::Limits limits{1 << 16, 1 << 10, 1 << 12};
  std::span<const char> buf(reinterpret_cast<const char*>(data), size);
  // Parse command after command, as the server does with a pipelined buffer.
  while (!buf.empty()) {
    try {
      const mini_redis::Parsed p = mini_redis::parse_command(buf, limits);
      if (!p.complete) break;
      if (p.consumed == 0 || p.consumed > buf.size() || p.args.size() > limits.max_args) {
        std::abort();
      }
      for (const auto& a : p.args) {
        if (a.size() > limits.max_bulk) std::abort();
      }
      buf = buf.subspan(p.consumed);
    } catch (const mini_redis::ProtocolError&) {
      break;
    }
  }
  return 0;
}
