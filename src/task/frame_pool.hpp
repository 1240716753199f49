// What the task layer knows of the frame pool (src/task/frame_pool.cpp) beyond allocate_frame
// and deallocate_frame (spool/core/frame_prefix.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spool::detail {

// The pool's size classes: a block of class c is c * kFrameGranule bytes, prefix included.
inline constexpr std::size_t kFrameGranule = 64;

// Starts fetching the lines of a block of `size_class` past its first 256 bytes, which the
// coroutine's creation wrote; its first poll writes the rest (docs/tasks.md, "Frame
// memory"). Class 0 (from malloc, size unknown): nothing.
inline void prefetch_frame_locals(const void* block, std::uint16_t size_class) noexcept {
  constexpr std::size_t kWrittenAtCreation = 256;
  constexpr std::size_t kCacheLine = 64;
  const auto* b = static_cast<const std::byte*>(block);
  for (std::size_t at = kWrittenAtCreation; at < size_class * kFrameGranule; at += kCacheLine) {
    __builtin_prefetch(b + at, 1);  // to be written: prefetchw where the target has it
  }
}

}  // namespace spool::detail
