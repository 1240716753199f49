// spool-console's live screen: what the user looks at and the keys that change it. The
// frame is built as lines of text (with ANSI attributes), so it can be checked without a
// terminal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "console/snapshot.hpp"
#include "render.hpp"

namespace spool_console {

class Ui {
 public:
  enum class View { kTasks, kDetails, kWorkers, kChannels, kLints };

  Ui(std::string source, SortKey key, bool reverse)
      : source_(std::move(source)), key_(key), reverse_(reverse) {}

  // A new snapshot to show.
  void update(spool::console::Snapshot s);
  // A message in the status line (a disconnection, say).
  void set_status(std::string text) { status_ = std::move(text); }
  // Handles the bytes of one read of the keyboard; false when the user quits.
  bool keys(const std::string& input);
  // The screen, `width` x `height`: each line at most `width` visible characters.
  std::vector<std::string> frame(std::size_t width, std::size_t height) const;

  View view() const noexcept { return view_; }

 private:
  bool key(const std::string& k);
  std::vector<const spool::console::TaskInfo*> rows() const;
  void clamp_selection();

  std::string source_;
  SortKey key_;
  bool reverse_;
  View view_ = View::kTasks;
  std::optional<spool::console::Snapshot> snapshot_;
  std::size_t selected_ = 0;               // the selected row of the tasks table
  std::optional<std::uint64_t> detailed_;  // the task the details view shows
  std::string status_;
};

}  // namespace spool_console
