#include "ui.hpp"

#include <algorithm>

namespace spool_console {

namespace {

constexpr const char* kBold = "\x1b[1m";
constexpr const char* kInverse = "\x1b[7m";
constexpr const char* kPlain = "\x1b[0m";

// `line` cut to `width` bytes (the tables are ASCII but for task names).
std::string fit(const std::string& line, std::size_t width) {
  return line.size() <= width ? line : line.substr(0, width);
}

// `text` in lines of at most `width` bytes, broken between words (a longer word is cut by
// fit()); continuation lines are indented.
std::vector<std::string> wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> out(1);
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!out.back().empty() && out.back().size() + 1 + word.size() > width) out.emplace_back("   ");
    if (!out.back().empty()) out.back() += ' ';
    out.back() += word;
    start = end + 1;
  }
  return out;
}

}  // namespace

void Ui::update(spool::console::Snapshot s) {
  snapshot_ = std::move(s);
  clamp_selection();
}

std::vector<const spool::console::TaskInfo*> Ui::rows() const {
  if (!snapshot_) return {};
  return sorted_tasks(*snapshot_, key_, reverse_);
}

void Ui::clamp_selection() {
  const std::size_t n = snapshot_ ? snapshot_->tasks.size() : 0;
  if (n == 0) {
    selected_ = 0;
  } else {
    selected_ = std::min(selected_, n - 1);
  }
}

bool Ui::keys(const std::string& input) {
  // Escape sequences of the arrow keys come whole in one read; anything else byte by byte.
  std::size_t i = 0;
  while (i < input.size()) {
    std::string k;
    if (input[i] == '\x1b' && i + 2 < input.size() && input[i + 1] == '[') {
      k = input.substr(i, 3);
      i += 3;
    } else {
      k = input.substr(i, 1);
      ++i;
    }
    if (!key(k)) return false;
  }
  return true;
}

bool Ui::key(const std::string& k) {
  if (k == "q" || k == "\x03") return false;  // q, or Ctrl-C (the terminal is raw)
  if (k == "t") view_ = View::kTasks;
  if (k == "w") view_ = View::kWorkers;
  if (k == "c") view_ = View::kChannels;
  if (k == "l") view_ = View::kLints;
  if (k == "s") key_ = next_sort_key(key_);
  if (k == "r") reverse_ = !reverse_;
  if (view_ == View::kTasks) {
    if (k == "j" || k == "\x1b[B") ++selected_;
    if ((k == "k" || k == "\x1b[A") && selected_ > 0) --selected_;
    clamp_selection();
    const auto r = rows();
    if ((k == "\r" || k == "\n" || k == "d") && selected_ < r.size()) {
      detailed_ = r[selected_]->id;
      view_ = View::kDetails;
    }
  } else if (view_ == View::kDetails && (k == "\x1b" || k == "\x7f" || k == "b")) {
    view_ = View::kTasks;
  }
  return true;
}

std::vector<std::string> Ui::frame(std::size_t width, std::size_t height) const {
  std::vector<std::string> out;
  auto line = [&](const std::string& text, const char* attr = nullptr) {
    if (out.size() >= height) return;
    out.push_back(attr ? attr + fit(text, width) + kPlain : fit(text, width));
  };
  line("spool-console  " + source_ + (snapshot_ ? "  " + summary_line(*snapshot_) : ""), kBold);
  const std::size_t lints = snapshot_ ? snapshot_->lints.size() : 0;
  line("[t]asks [w]orkers [c]hannels [l]ints(" + std::to_string(lints) +
       ")  sort: " + std::string(sort_key_name(key_)) + (reverse_ ? " (reversed)" : "") +
       "  [s]ort [r]everse  enter: details  [b]ack  [q]uit");
  line(status_);
  if (!snapshot_) {
    line("waiting for the first snapshot...");
    return out;
  }
  const spool::console::Snapshot& s = *snapshot_;
  switch (view_) {
    case View::kTasks: {
      const auto r = rows();
      const auto table = tasks_table(s, r);
      line(table[0], kBold);
      // Scrolls so that the selected row is on the screen.
      const std::size_t room = height > out.size() ? height - out.size() : 0;
      const std::size_t first = selected_ >= room && room > 0 ? selected_ - room + 1 : 0;
      for (std::size_t i = first; i < r.size(); ++i) {
        line(table[i + 1], i == selected_ ? kInverse : nullptr);
      }
      break;
    }
    case View::kDetails: {
      const auto it = std::find_if(s.tasks.begin(), s.tasks.end(),
                                   [&](const auto& t) { return detailed_ && t.id == *detailed_; });
      if (it == s.tasks.end()) {
        line("task " + (detailed_ ? std::to_string(*detailed_) : std::string("?")) +
             " has finished  ([b]ack)");
      } else {
        for (const auto& l : task_details(*it)) line(l);
      }
      break;
    }
    case View::kWorkers: {
      const auto table = workers_table(s);
      line(table[0], kBold);
      for (std::size_t i = 1; i < table.size(); ++i) line(table[i]);
      break;
    }
    case View::kChannels: {
      const std::size_t bar = width > 80 ? std::min<std::size_t>(width - 60, 40) : 20;
      const auto table = channels_table(s, bar);
      line(table[0], kBold);
      for (std::size_t i = 1; i < table.size(); ++i) line(table[i]);
      break;
    }
    case View::kLints:
      for (const auto& l : lints_list(s)) {
        for (const auto& part : wrap(l, width)) line(part);
      }
      break;
  }
  return out;
}

}  // namespace spool_console
