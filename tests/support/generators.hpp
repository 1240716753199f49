// A finite generator that many stream tests read.
#pragma once

#include "spool/stream/generator.hpp"

namespace spool_test {

/// Yields 0, 1, ..., n - 1.
inline spool::Generator<int> count_to(int n) {
  for (int i = 0; i < n; ++i) co_yield i;
}

}  // namespace spool_test
