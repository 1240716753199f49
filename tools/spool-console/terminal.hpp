// The terminal while spool-console's live screen runs: raw keys, the alternate screen, no
// cursor; restored by the destructor.
#pragma once

#include <termios.h>
#include <cstddef>
#include <string>
#include <vector>

namespace spool_console {

class Terminal {
 public:
  // Takes over the terminal on standard input and output.
  Terminal();
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  // The window's size (80 x 24 when the terminal does not say).
  std::size_t width() const;
  std::size_t height() const;
  // Draws `lines` over the whole screen.
  void draw(const std::vector<std::string>& lines) const;

 private:
  termios saved_{};
  bool raw_ = false;
};

}  // namespace spool_console
