// The memory in front of every Task frame: room for a spawned task's header, and the pool
// the frames come from.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spool/config.hpp"

namespace spool::detail {

// Every Task frame is allocated with this many bytes in front of it: room for the task
// header of a spawned task (src/task), so that a spawned task is one allocation. Exactly the
// header's size, rounded up to 16 so that the frame keeps operator new's alignment.
inline constexpr std::size_t kFramePrefixSize = 144;
static_assert(kFramePrefixSize % __STDCPP_DEFAULT_NEW_ALIGNMENT__ == 0,
              "the frame after the prefix must keep operator new's alignment");

// The start of every frame's prefix. `spawned` is false for a frame that was never spawned:
// freeing the frame then frees the memory at once. A spawned task's header sets it, and
// from then on frees the memory itself (the header may outlive the frame): freeing the
// frame only sets `frame_destroyed`.
// `size_class` says which free list the memory returns to (see allocate_frame): a block of
// class c is c * 64 bytes, prefix included (0: from malloc, of the size asked for).
struct FramePrefix {
  std::uint16_t size_class = 0;
  bool spawned = false;
  // Set when a spawned task's frame is destroyed, always before the header's last reference
  // goes: by the claimer (a cancel, or a completion without JoinHandle) or by the
  // JoinHandle's drop after completion; ordered before later readers by the acq_rel RMWs
  // of the header's state word.
  bool frame_destroyed = false;
};

// Frame memory, recycled through per-thread free lists by size class (src/task/
// frame_pool.cpp). allocate_frame sets `size_class`, which deallocate_frame needs back.
SPOOL_API void* allocate_frame(std::size_t bytes, std::uint16_t& size_class);
SPOOL_API void deallocate_frame(void* memory, std::uint16_t size_class) noexcept;

}  // namespace spool::detail
