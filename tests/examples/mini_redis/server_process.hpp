// The mini-redis executable run as a child process, for the tests that measure its memory
// (its own resident set, apart from the test's clients) and its exit at a SIGTERM.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "spool/net.hpp"

namespace mini_redis_test {

/// A running mini-redis (MINI_REDIS_BINARY) listening on a free loopback port.
class ServerProcess {
 public:
  /// Starts it with `flags` (after --port 0) and waits for the line that gives its address.
  /// Under ASan its quarantine of freed memory is kept small, so that what it holds shows.
  explicit ServerProcess(const std::vector<std::string>& flags);
  /// Kills it if it still runs.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  /// Where it listens.
  spool::net::SocketAddr address() const { return address_; }
  /// Its resident memory now, in KiB (VmRSS).
  long resident_kib() const { return status_kib("VmRSS:"); }
  /// The most resident memory it has had, in KiB (VmHWM).
  long peak_kib() const { return status_kib("VmHWM:"); }
  /// Sends SIGTERM and waits for it: its exit status (-1 when a signal ended it).
  int terminate();

 private:
  long status_kib(const char* field) const;
  pid_t pid_ = -1;
  spool::net::SocketAddr address_;
};

}  // namespace mini_redis_test
