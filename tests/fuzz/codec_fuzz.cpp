// libFuzzer target: spool's codecs (LinesCodec, LengthDelimitedCodec of every width and byte
// order) give the same frames and errors whatever the split of their input into reads; any
// crash, sanitizer report or endless error loop fails. `scripts/fuzz codec` runs it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "fuzz/codec_split.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!spool_codec_test::same_outcomes_when_split(std::span(data, size))) std::abort();
  return 0;
}
