// Priority levels and channels (docs/levels.md): the types Builder::levels and
// Builder::schedule take, and the ChannelId that Runtime::channel gives.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "spool/config.hpp"

namespace spool {

namespace detail {
struct ChannelIdAccess;
}  // namespace detail

/// The most priority levels a runtime may have.
inline constexpr std::size_t kMaxLevels = 16;
/// The most channels a runtime may have, over all its levels.
inline constexpr std::size_t kMaxChannels = 64;

/// A named queue of tasks inside a priority level (one per tenant or request class, say).
/// Channel names are unique within a runtime. `Channel("audit").complete_on_close()`.
class Channel {
 public:
  /// A FIFO channel called `name`.
  Channel(std::string name) : name_(std::move(name)) {}  // NOLINT: implicit, reads as a name
  /// A FIFO channel called `name`.
  Channel(const char* name) : name_(name) {}  // NOLINT: implicit, reads as a name
  /// Marks the channel complete-on-close: at shutdown its tasks (those spawned onto it during
  /// the shutdown too) run to completion, and the shutdown waits for every CloseGuard, before
  /// the other tasks are cancelled (docs/levels.md).
  Channel& complete_on_close(bool on = true) & {
    complete_on_close_ = on;
    return *this;
  }
  /// See the lvalue overload.
  Channel&& complete_on_close(bool on = true) && { return std::move(complete_on_close(on)); }
  /// Makes the channel serve the task with the earliest deadline first (spawn_on's deadline
  /// argument) instead of in arrival order; a task that starts after its deadline counts as
  /// a miss in ChannelMetrics::deadline_misses.
  Channel& earliest_deadline_first(bool on = true) & {
    earliest_deadline_first_ = on;
    return *this;
  }
  /// See the lvalue overload.
  Channel&& earliest_deadline_first(bool on = true) && {
    return std::move(earliest_deadline_first(on));
  }
  /// The channel's name (Runtime::channel finds it by this).
  const std::string& name() const noexcept { return name_; }
  /// Whether the channel is complete-on-close.
  bool is_complete_on_close() const noexcept { return complete_on_close_; }
  /// Whether the channel is earliest-deadline-first.
  bool is_earliest_deadline_first() const noexcept { return earliest_deadline_first_; }

 private:
  std::string name_;
  bool complete_on_close_ = false;
  bool earliest_deadline_first_ = false;
};

/// One priority level: its channels, which share the level's turn round-robin, so that one
/// flooded channel cannot starve a sibling. `Level{"tenant-a", "tenant-b"}`.
struct Level {
  /// A level with these channels (at least one).
  Level(std::initializer_list<Channel> list) : channels(list) {}
  /// A level with these channels (at least one).
  explicit Level(std::vector<Channel> list) : channels(std::move(list)) {}
  /// The level's channels, in the order their round-robin visits them.
  std::vector<Channel> channels;
};

/// Scheduling between levels (the default): whenever a worker picks its next task, it picks
/// from the highest level that has a runnable task anywhere in the runtime; a worker running a
/// lower-level task is asked to yield when a higher level's task has no idle worker to run it.
struct HighestFirst {};

/// Scheduling between levels: each worker cycles through the levels, giving each up to its
/// time slice while the level has work (a level with nothing to run gives its turn away at
/// once), so that no level starves. Under saturation, CPU time per level follows the slices.
struct RoundRobin {
  /// One slice per level, highest level first; each must be positive and at most one hour.
  std::vector<std::chrono::nanoseconds> slices;
};

/// Identifies a channel of one runtime (Runtime::channel / Handle::channel). Spawning with
/// the id of another runtime's channel throws std::invalid_argument.
class ChannelId {
 public:
  /// The channel's position among all the runtime's channels, highest level first.
  std::uint16_t index() const noexcept { return index_; }
  /// Same runtime, same channel.
  friend bool operator==(const ChannelId&, const ChannelId&) = default;

 private:
  friend struct detail::ChannelIdAccess;
  ChannelId(std::uint32_t runtime_tag, std::uint16_t index) noexcept
      : runtime_tag_(runtime_tag), index_(index) {}
  std::uint32_t runtime_tag_;
  std::uint16_t index_;
};

namespace detail {
/// Builds and reads ChannelIds (the runtime's side; not for users).
struct ChannelIdAccess {
  /// The id of channel `index` of the runtime tagged `runtime_tag`.
  static ChannelId make(std::uint32_t runtime_tag, std::uint16_t index) noexcept {
    return ChannelId(runtime_tag, index);
  }
  /// The tag of the runtime `id` belongs to.
  static std::uint32_t runtime_tag(const ChannelId& id) noexcept { return id.runtime_tag_; }
};
}  // namespace detail

}  // namespace spool
