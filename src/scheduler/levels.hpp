// The priority levels and channels of a runtime (docs/levels.md), as its schedulers read them:
// channels numbered 0..n-1 from the highest level down, each level a contiguous range.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spool/detail/runtime_config.hpp"
#include "spool/levels.hpp"

namespace spool::detail {

class LevelTable {
 public:
  // Validates the levels, the schedule and the default channel of `config`; throws
  // std::invalid_argument naming the problem.
  explicit LevelTable(const RuntimeConfig& config);

  std::uint16_t num_levels() const noexcept { return num_levels_; }
  std::uint16_t num_channels() const noexcept { return num_channels_; }
  // Channels [first_channel(l), end_channel(l)) make up level l (0 is the highest).
  std::uint16_t first_channel(std::uint16_t level) const noexcept { return first_[level]; }
  std::uint16_t end_channel(std::uint16_t level) const noexcept { return first_[level + 1]; }
  std::uint16_t level_of(std::uint16_t channel) const noexcept { return level_of_[channel]; }
  const std::string& name(std::uint16_t channel) const noexcept { return names_[channel]; }
  // The channel called `name`, if there is one.
  std::optional<std::uint16_t> find(std::string_view name) const noexcept;
  // Where a spawn from outside any task of the runtime goes.
  std::uint16_t default_channel() const noexcept { return default_channel_; }
  // The names of all channels, comma-separated (for error messages).
  std::string list_names() const;

  // Whether channel c is drained to completion at shutdown; the mask of all such channels.
  bool complete_on_close(std::uint16_t channel) const noexcept {
    return (complete_on_close_mask_ >> channel) & 1;
  }
  std::uint64_t complete_on_close_mask() const noexcept { return complete_on_close_mask_; }
  // Whether channel c serves the earliest deadline first; whether any channel does.
  bool earliest_deadline_first(std::uint16_t channel) const noexcept {
    return (edf_mask_ >> channel) & 1;
  }
  bool any_earliest_deadline_first() const noexcept { return edf_mask_ != 0; }

  bool round_robin() const noexcept { return round_robin_; }
  // Level l's time slice under RoundRobin.
  std::chrono::nanoseconds slice(std::uint16_t level) const noexcept { return slices_[level]; }

 private:
  std::vector<std::string> names_;
  // Inline arrays, not vectors: the schedulers read them on every pick.
  std::array<std::uint16_t, kMaxChannels> level_of_{};
  std::array<std::uint16_t, kMaxLevels + 1> first_{};  // num_levels_ + 1 entries used
  std::uint16_t num_levels_ = 0;
  std::uint16_t num_channels_ = 0;
  std::uint16_t default_channel_ = 0;
  std::uint64_t complete_on_close_mask_ = 0;  // bit c: channel c (kMaxChannels <= 64)
  std::uint64_t edf_mask_ = 0;
  bool round_robin_ = false;
  std::vector<std::chrono::nanoseconds> slices_;
};

}  // namespace spool::detail
