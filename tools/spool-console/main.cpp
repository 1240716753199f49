// spool-console: a terminal view of a running spool program (docs/console.md).
//   spool-console [--once] [--interval MS] [--sort KEY] [--reverse] SOCKET
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

#include "connection.hpp"
#include "console/snapshot.hpp"
#include "render.hpp"
#include "terminal.hpp"
#include "ui.hpp"

namespace {

constexpr const char* kUsage = R"(usage: spool-console [options] SOCKET

Shows a running spool program: its tasks, workers, levels and channels, and lints. The
program serves SOCKET when built with spool::Builder::console(SOCKET) or run with
SPOOL_CONSOLE=SOCKET (docs/console.md).

options:
  --once           print one snapshot as text and exit (for CI logs and bug reports)
  --interval MS    how often the live screen refreshes (default 1000; 10 to 86400000)
  --sort KEY       sort the tasks by id, name, channel, state, polls, wakes, self_wakes,
                   busy or idle (default polls)
  --reverse        the other way round
  -h, --help       this text

keys: t tasks, w workers, c channels, l lints, s next sort key, r reverse, j/k or arrows
select, enter details, b back, q quit
)";

struct Options {
  std::string socket;
  bool once = false;
  int interval_ms = 1000;
  spool_console::SortKey key = spool_console::SortKey::kPolls;
  bool reverse = false;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("spool-console: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--once") {
      o.once = true;
    } else if (a == "--interval") {
      o.interval_ms = std::stoi(value());
      if (o.interval_ms < 10 || o.interval_ms > spool::console::kMaxIntervalMs) {
        throw std::invalid_argument("spool-console: --interval is from 10 to " +
                                    std::to_string(spool::console::kMaxIntervalMs) + " ms");
      }
    } else if (a == "--sort") {
      o.key = spool_console::sort_key(value());
    } else if (a == "--reverse") {
      o.reverse = true;
    } else if (!a.empty() && a[0] == '-') {
      throw std::invalid_argument("spool-console: unknown option " + a + " (--help lists them)");
    } else if (o.socket.empty()) {
      o.socket = a;
    } else {
      throw std::invalid_argument("spool-console: one socket only");
    }
  }
  if (o.socket.empty()) throw std::invalid_argument("spool-console: which socket? (--help)");
  return o;
}

// The server's answer, or an exception that says what went wrong.
spool::console::Snapshot read_snapshot(const std::string& line) {
  if (line.find("\"error\"") != std::string::npos && line.find("\"tasks\"") == std::string::npos) {
    throw std::runtime_error("spool-console: the runtime refused: " + line);
  }
  spool::console::Snapshot s = spool::console::snapshot_from_json(line);
  spool_console::make_printable(s);
  return s;
}

int once(const Options& o) {
  spool_console::Connection c(o.socket, 0);
  const auto line = c.wait_line();
  if (!line) throw std::runtime_error("spool-console: the runtime closed without a snapshot");
  for (const auto& l : spool_console::whole_text(read_snapshot(*line), o.key, o.reverse)) {
    std::puts(l.c_str());
  }
  return 0;
}

int live(const Options& o) {
  spool_console::Connection c(o.socket, o.interval_ms);
  spool_console::Ui ui(o.socket, o.key, o.reverse);
  spool_console::Terminal term;
  bool connected = true;
  for (;;) {
    term.draw(ui.frame(term.width(), term.height()));
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0},
                     {c.fd(), static_cast<short>(connected ? POLLIN : 0), 0}};
    if (::poll(fds, 2, -1) < 0) continue;
    if (fds[0].revents & (POLLIN | POLLHUP)) {
      char buf[64];
      const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
      if (n <= 0 || !ui.keys(std::string(buf, static_cast<std::size_t>(n)))) return 0;
    }
    if (connected && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      connected = c.receive();
      std::optional<std::string> last;
      while (auto line = c.next_line()) last = std::move(line);
      if (last) {
        try {
          ui.update(read_snapshot(*last));
        } catch (const std::exception& e) {
          ui.set_status(e.what());
        }
      }
      if (!connected) ui.set_status("the runtime closed the connection (it shut down); q quits");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    return o.once ? once(o) : live(o);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
