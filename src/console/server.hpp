// The console's server: a thread of its own that serves snapshots on a Unix socket
// (docs/console.md). It reads the runtime only through a SampleSource (the public
// introspection API), so a runtime whose workers are all stuck still answers.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "console/lints.hpp"
#include "console/listener.hpp"
#include "console/sample.hpp"
#include "spool/metrics.hpp"
#include "spool/task_meta.hpp"

namespace spool::console {

// What the server reads of the runtime at each snapshot.
struct Sample {
  RuntimeMetrics metrics;
  std::vector<TaskSnapshot> tasks;
};
using SampleSource = std::function<Sample()>;

// Settings of a server.
struct ServerOptions {
  std::string path;  // the socket's path
  // The most bytes waiting to be sent to one subscriber: a snapshot that does not fit (because
  // the previous one is still being sent, or it is larger) is dropped and counted.
  std::size_t max_buffer = std::size_t{8} << 20;
  // The most subscribers at once; more connections are closed at once.
  std::size_t max_subscribers = 32;
  LintOptions lints;
};

// Counters of a server (tests read them).
struct ServerStats {
  std::size_t subscribers = 0;       // connected now
  std::uint64_t snapshots_sent = 0;  // queued to a subscriber in full
  std::uint64_t snapshots_dropped = 0;
  std::size_t buffered_high_water = 0;  // the most bytes ever waiting for one subscriber
};

class Server {
 public:
  // Listens at options.path (throws as Listener does) and starts the thread (throws
  // std::system_error when it cannot).
  Server(ServerOptions options, RuntimeFacts facts, SampleSource source);
  // Stops the thread, closes every connection, unlinks the socket.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  ServerStats stats() const;

 private:
  struct Subscriber;
  void run();
  // Reads a subscriber's request; false when it is to be closed.
  bool read_request(Subscriber& s, std::chrono::steady_clock::time_point now);
  // Sends what its buffer holds; false when it is to be closed.
  bool flush(Subscriber& s);
  // Queues a snapshot for `s` from `sample` (or drops it: larger than the buffer).
  void offer(Subscriber& s, const Sample& sample, std::chrono::steady_clock::time_point now);
  // Counts a snapshot `s` does not get, and sets its next due time.
  void drop_snapshot(Subscriber& s, std::chrono::steady_clock::time_point now);

  const ServerOptions options_;
  const RuntimeFacts facts_;
  const SampleSource source_;
  const std::chrono::steady_clock::time_point started_;
  Listener listener_;
  int wake_fd_ = -1;  // an eventfd: the destructor writes it to stop the thread
  std::vector<std::unique_ptr<Subscriber>> subscribers_;  // the thread's alone
  mutable std::mutex stats_mutex_;
  ServerStats stats_;  // guarded by stats_mutex_
  std::thread thread_;
};

}  // namespace spool::console
