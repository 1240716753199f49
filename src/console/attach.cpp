// Builder::console and SPOOL_CONSOLE: starts a runtime's console server and hands it to the
// runtime, which stops it during its shutdown.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "console/server.hpp"
#include "runtime/attachment.hpp"
#include "runtime/shared.hpp"

namespace spool::detail {
namespace {

// The server as the runtime owns it: destroying it stops the thread and unlinks the socket.
class ConsoleAttachment final : public Attachment {
 public:
  ConsoleAttachment(const std::string& path, const RuntimeConfig& config, RuntimeShared& rt)
      : server_(options(path), console::runtime_facts(config), [&rt] {
          // The public introspection API only: it answers while every worker is stuck.
          return console::Sample{runtime_metrics(rt), runtime_tasks(rt)};
        }) {}

 private:
  static console::ServerOptions options(const std::string& path) {
    console::ServerOptions o;
    o.path = path;
    return o;
  }
  console::Server server_;
};

}  // namespace

void start_console(RuntimeShared& rt, const RuntimeConfig& config) {
  std::string path;
  bool from_env = false;
  if (config.console) {
    path = *config.console;
  } else if (const char* env = std::getenv("SPOOL_CONSOLE"); env != nullptr) {
    path = env;
    from_env = true;
  }
  if (path.empty()) return;  // no console: no thread
  try {
    rt.attach(std::make_unique<ConsoleAttachment>(path, config, rt));
  } catch (const std::exception& e) {
    if (!from_env) throw;
    // The environment asks for a console; a program must not fail for it (another runtime of
    // the process may serve there already).
    std::fprintf(stderr, "spool: SPOOL_CONSOLE=%s: this runtime serves no console: %s\n",
                 path.c_str(), e.what());
  }
}

}  // namespace spool::detail
