// splitmix64, the pseudo-random sequence of W9 and W15 (shared/bench/WORKLOADS.md), as the
// tokio peer defines it at the top of its main.rs; every runtime reproduces it bit for bit.
// Standalone (no spool): the floor programs use it too.
#pragma once

#include <cstdint>

namespace spool_bench {

// The generator seeded with `state`; next() gives its outputs in order.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

}  // namespace spool_bench
