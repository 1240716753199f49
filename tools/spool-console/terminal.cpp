#include "terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

namespace spool_console {
namespace {

void put(const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

winsize window() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) {
    ws.ws_col = 80;
    ws.ws_row = 24;
  }
  return ws;
}

}  // namespace

Terminal::Terminal() {
  if (::tcgetattr(STDIN_FILENO, &saved_) == 0) {
    termios raw = saved_;
    // Keys one by one, unechoed; Ctrl-C arrives as a key (the screen quits and restores).
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG);
    raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    raw_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  put("\x1b[?1049h\x1b[?25l");  // the alternate screen, no cursor
}

Terminal::~Terminal() {
  put("\x1b[0m\x1b[?25h\x1b[?1049l");
  if (raw_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
}

std::size_t Terminal::width() const { return window().ws_col; }
std::size_t Terminal::height() const { return window().ws_row; }

void Terminal::draw(const std::vector<std::string>& lines) const {
  std::string out = "\x1b[H";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    out += lines[i];
    out += "\x1b[K";  // clears what a longer line left
    if (i + 1 < lines.size()) out += "\r\n";
  }
  out += "\x1b[J";  // and the lines below
  put(out);
}

}  // namespace spool_console
