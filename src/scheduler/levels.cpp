#include "scheduler/levels.hpp"

#include <stdexcept>

#include "spool/levels.hpp"

namespace spool::detail {

namespace {

// The longest RoundRobin slice build() accepts.
constexpr std::chrono::nanoseconds kMaxSlice = std::chrono::hours(1);

[[noreturn]] void reject(const std::string& what) {
  throw std::invalid_argument("spool::Builder: " + what);
}

}  // namespace

LevelTable::LevelTable(const RuntimeConfig& config) : round_robin_(config.round_robin) {
  static_assert(kMaxChannels <= 64, "the channel masks are 64-bit words");
  std::vector<std::vector<ChannelConfig>> levels = config.levels;
  if (levels.empty()) {
    if (config.round_robin || !config.default_channel.empty()) {
      reject(
          "schedule() and default_channel() need levels(): call levels({...}) with at least "
          "one level of at least one channel");
    }
    levels.push_back({ChannelConfig{kDefaultChannelName}});
  }
  if (levels.size() > kMaxLevels) {
    reject("levels(): " + std::to_string(levels.size()) + " levels given; a runtime has at most " +
           std::to_string(kMaxLevels));
  }
  num_levels_ = static_cast<std::uint16_t>(levels.size());
  first_[0] = 0;
  for (std::size_t l = 0; l < levels.size(); ++l) {
    if (levels[l].empty()) {
      reject("levels(): level " + std::to_string(l) +
             " has no channel; every level needs at least one (Level{\"name\"})");
    }
    for (const ChannelConfig& channel : levels[l]) {
      const std::string& name = channel.name;
      if (name.empty())
        reject("levels(): a channel of level " + std::to_string(l) + " has an empty name");
      if (find(name)) {
        reject("levels(): the channel name \"" + name +
               "\" is used twice; channel names must be unique in a runtime");
      }
      if (names_.size() == kMaxChannels) {
        reject("levels(): more than " + std::to_string(kMaxChannels) +
               " channels; a runtime has at most " + std::to_string(kMaxChannels) +
               " over all its levels");
      }
      if (channel.complete_on_close) complete_on_close_mask_ |= std::uint64_t{1} << names_.size();
      if (channel.earliest_deadline_first) edf_mask_ |= std::uint64_t{1} << names_.size();
      level_of_[names_.size()] = static_cast<std::uint16_t>(l);
      names_.push_back(name);
    }
    first_[l + 1] = static_cast<std::uint16_t>(names_.size());
  }
  num_channels_ = static_cast<std::uint16_t>(names_.size());
  if (config.round_robin) {
    if (config.slices.size() != levels.size()) {
      reject("schedule(RoundRobin): " + std::to_string(config.slices.size()) + " slices for " +
             std::to_string(levels.size()) +
             " levels; give exactly one slice per level, highest level first");
    }
    for (std::size_t l = 0; l < config.slices.size(); ++l) {
      if (config.slices[l] <= std::chrono::nanoseconds::zero()) {
        reject("schedule(RoundRobin): the slice of level " + std::to_string(l) + " is " +
               std::to_string(config.slices[l].count()) + " ns; every slice must be positive");
      }
      // (A slice is added to the clock's now: an unbounded one would overflow.)
      if (config.slices[l] > kMaxSlice) {
        reject("schedule(RoundRobin): the slice of level " + std::to_string(l) + " is " +
               std::to_string(config.slices[l].count()) +
               " ns; a slice is at most one hour (a level that should keep the workers "
               "longer belongs above the others under HighestFirst)");
      }
    }
    slices_ = config.slices;
  }
  if (config.default_channel.empty()) {
    default_channel_ = first_[num_levels_ - 1];  // the first channel of the lowest level
  } else if (auto c = find(config.default_channel)) {
    default_channel_ = *c;
  } else {
    reject("default_channel(\"" + config.default_channel +
           "\"): no such channel; the channels are: " + list_names());
  }
}

std::optional<std::uint16_t> LevelTable::find(std::string_view name) const noexcept {
  for (std::size_t c = 0; c < names_.size(); ++c) {
    if (names_[c] == name) return static_cast<std::uint16_t>(c);
  }
  return std::nullopt;
}

std::string LevelTable::list_names() const {
  std::string out;
  for (const std::string& n : names_) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace spool::detail
