// spool-console's views, as lines of text: pure functions of a snapshot and what the user
// chose, so that --once, the live screen and the tests share them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "console/snapshot.hpp"

namespace spool_console {

// The keys the tasks table sorts by (`--sort`, and `s` cycles through them).
enum class SortKey { kId, kName, kChannel, kState, kPolls, kWakes, kSelfWakes, kBusy, kIdle };

// The key called `name` ("id", "name", "channel", "state", "polls", "wakes", "self_wakes",
// "busy", "idle"); throws std::invalid_argument naming the keys for another name.
SortKey sort_key(std::string_view name);
std::string_view sort_key_name(SortKey key);
// The next key (wraps).
SortKey next_sort_key(SortKey key);

// The tasks of `s`, sorted by `key` (descending for counts and times, ascending for names
// and ids; `reverse` flips it). Ties keep id order.
std::vector<const spool::console::TaskInfo*> sorted_tasks(const spool::console::Snapshot& s,
                                                          SortKey key, bool reverse);

// One line about the runtime (flavour, pid, workers, tasks, uptime).
std::string summary_line(const spool::console::Snapshot& s);
// The tasks table: a header line, then one line per task of `tasks`.
std::vector<std::string> tasks_table(const spool::console::Snapshot& s,
                                     const std::vector<const spool::console::TaskInfo*>& tasks);
// One task's fields, its wait and its backtrace (when the runtime measures them).
std::vector<std::string> task_details(const spool::console::TaskInfo& t);
// The workers table.
std::vector<std::string> workers_table(const spool::console::Snapshot& s);
// Levels and channels, each with its share of the poll time as a bar `bar_width` wide.
std::vector<std::string> channels_table(const spool::console::Snapshot& s, std::size_t bar_width);
// The lints, one per line (a line that says none when there are none).
std::vector<std::string> lints_list(const spool::console::Snapshot& s);
// Everything, as --once prints it.
std::vector<std::string> whole_text(const spool::console::Snapshot& s, SortKey key, bool reverse);

// Replaces the control characters (escape sequences included) in every text of `s` by '?': a
// task name is the program's data, and must not drive the terminal that shows it.
void make_printable(spool::console::Snapshot& s);

// A duration for people: "850 ns", "12.3 us", "4.1 ms", "2.50 s", "3m05s".
std::string human_duration(std::uint64_t ns);

}  // namespace spool_console
