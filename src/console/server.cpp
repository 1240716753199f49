#include "console/server.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <optional>
#include <system_error>

#include "console/json.hpp"
#include "console/snapshot.hpp"
#include "sync/thread.hpp"

namespace spool::console {

using Clock = std::chrono::steady_clock;

namespace {

// A request line longer than this is refused (it is a dozen bytes).
constexpr std::size_t kMaxRequest = 4096;
// The shortest interval a subscriber may ask for.
constexpr std::chrono::milliseconds kMinInterval{10};
// An interval longer than kMaxIntervalMs is refused: unbounded, `now + interval` overflowed
// (in release it wrapped into the past, and a snapshot went out at every pass), and a wait
// must fit poll()'s int milliseconds.
static_assert(kMaxIntervalMs <= std::numeric_limits<int>::max());

std::string error_line(const std::string& message) {
  JsonWriter w;
  w.begin_object().member("v", kProtocolVersion).member("error", message).end_object();
  return std::move(w).take() + "\n";
}

}  // namespace

// One connection. Only the server's thread touches it.
struct Server::Subscriber {
  Subscriber(int socket, RuntimeFacts facts, LintOptions lints)
      : fd(socket), maker(std::move(facts), lints) {}
  ~Subscriber() { ::close(fd); }
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  int fd;
  std::string request;  // the request's bytes so far
  bool subscribed = false;
  // The client's input ended (it shut its write side down): no longer polled for (the end
  // would be ready at every poll); a subscriber is served until its read side goes too
  // (POLLHUP).
  bool request_ended = false;
  bool once = false;
  std::chrono::milliseconds interval{0};
  Clock::time_point due;
  std::string out;  // bytes to send: out[sent..]
  std::size_t sent = 0;
  bool close_when_sent = false;  // a --once subscriber, or a refused request
  bool closed = false;
  std::uint64_t dropped = 0;
  SnapshotMaker maker;
};

Server::Server(ServerOptions options, RuntimeFacts facts, SampleSource source)
    : options_(std::move(options)),
      facts_(std::move(facts)),
      source_(std::move(source)),
      started_(Clock::now()),
      listener_(options_.path) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0)
    throw std::system_error(errno, std::generic_category(), "spool: console eventfd");
  try {
    thread_ = detail::start_thread("spool-console", [this] { run(); });
  } catch (...) {
    ::close(wake_fd_);
    throw;
  }
}

Server::~Server() {
  const std::uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof one);
  thread_.join();
  subscribers_.clear();
  ::close(wake_fd_);
}

ServerStats Server::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

void Server::run() {
  std::vector<pollfd> fds;
  for (;;) {
    Clock::time_point now = Clock::now();
    int timeout_ms = -1;
    fds.assign({{wake_fd_, POLLIN, 0}, {listener_.fd(), POLLIN, 0}});
    for (const auto& s : subscribers_) {
      short events = s->request_ended ? 0 : POLLIN;
      if (s->sent < s->out.size()) events |= POLLOUT;
      fds.push_back({s->fd, events, 0});
      if (s->subscribed && !s->close_when_sent) {
        const auto wait = std::chrono::ceil<std::chrono::milliseconds>(s->due - now).count();
        const int w = static_cast<int>(std::max<decltype(wait)>(0, wait));
        timeout_ms = timeout_ms < 0 ? w : std::min(timeout_ms, w);
      }
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {
      if (errno == EINTR) continue;
      return;  // cannot happen with valid descriptors; stop serving rather than spin
    }
    if (fds[0].revents != 0) return;  // the destructor asks us to stop
    if (fds[1].revents & POLLIN) {
      for (;;) {
        const int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (subscribers_.size() >= options_.max_subscribers) {
          ::close(fd);
          continue;
        }
        subscribers_.push_back(std::make_unique<Subscriber>(fd, facts_, options_.lints));
      }
    }
    now = Clock::now();
    for (std::size_t i = 0; i < subscribers_.size(); ++i) {
      Subscriber& s = *subscribers_[i];
      const short revents = i + 2 < fds.size() && fds[i + 2].fd == s.fd ? fds[i + 2].revents : 0;
      if (s.request_ended) {
        if (revents & (POLLHUP | POLLERR)) s.closed = true;  // both directions are gone
      } else if (revents & (POLLIN | POLLHUP | POLLERR)) {
        if (!read_request(s, now)) s.closed = true;
      }
      if (!s.closed && (revents & POLLOUT) && !flush(s)) s.closed = true;
    }
    std::optional<Sample> sample;
    for (auto& p : subscribers_) {
      Subscriber& s = *p;
      if (s.closed || !s.subscribed || s.close_when_sent || s.due > now) continue;
      if (s.sent < s.out.size()) {
        // The previous snapshot is still on its way: this one is dropped before it is made,
        // so that a console that does not read costs the runtime no sampling.
        drop_snapshot(s, now);
        continue;
      }
      try {
        if (!sample) sample = source_();
        offer(s, *sample, now);
      } catch (const std::exception&) {
        // Out of memory, say: this snapshot is lost, the next may succeed.
        s.due = now + s.interval;
      }
    }
    std::size_t subscribers = 0;
    std::erase_if(subscribers_, [&](const auto& s) {
      const bool done = s->closed || (s->close_when_sent && s->sent == s->out.size());
      subscribers += done ? 0 : 1;
      return done;
    });
    std::lock_guard lock(stats_mutex_);
    stats_.subscribers = subscribers;
  }
}

bool Server::read_request(Subscriber& s, Clock::time_point now) {
  char buf[1024];
  for (;;) {
    const ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n == 0) {
      // The client closed, or only shut its write side down (`socat`, `nc -N`): after its
      // request, that is served (a --once snapshot, or snapshots until the client goes); in
      // the middle of one, it is told why it gets nothing.
      if (s.subscribed || s.close_when_sent || s.request.empty()) {
        s.request_ended = s.subscribed;
        return s.subscribed;
      }
      s.request_ended = true;
      s.out = error_line("the request ended without its newline");
      s.close_when_sent = true;
      return flush(s);
    }
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (s.subscribed) continue;  // anything after the request is ignored
    s.request.append(buf, static_cast<std::size_t>(n));
    const std::size_t newline = s.request.find('\n');
    if (newline == std::string::npos) {
      if (s.request.size() > kMaxRequest) {
        s.out = error_line("request line longer than " + std::to_string(kMaxRequest) + " bytes");
        s.close_when_sent = true;
        return flush(s);
      }
      continue;
    }
    try {
      const JsonValue req = parse_json(std::string_view(s.request).substr(0, newline));
      const JsonValue* v = req.find("v");
      const JsonValue* interval = req.find("interval_ms");
      if (v == nullptr || !v->is_integer || v->integer != kProtocolVersion) {
        throw std::invalid_argument("the request's \"v\" is not " +
                                    std::to_string(kProtocolVersion));
      }
      if (interval == nullptr || !interval->is_integer || interval->integer < 0 ||
          interval->integer > kMaxIntervalMs) {
        throw std::invalid_argument("the request needs \"interval_ms\", an integer from 0 to " +
                                    std::to_string(kMaxIntervalMs) + " (a day)");
      }
      s.once = interval->integer == 0;
      s.interval = std::max(kMinInterval, std::chrono::milliseconds(interval->integer));
      s.subscribed = true;
      s.due = now;
      s.request.clear();
      s.request.shrink_to_fit();
    } catch (const std::invalid_argument& e) {
      s.out = error_line(e.what());
      s.close_when_sent = true;
      return flush(s);
    }
  }
}

bool Server::flush(Subscriber& s) {
  while (s.sent < s.out.size()) {
    const ssize_t n =
        ::send(s.fd, s.out.data() + s.sent, s.out.size() - s.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    s.sent += static_cast<std::size_t>(n);
  }
  // All sent: give the memory back (a snapshot may be megabytes).
  s.out = std::string();
  s.sent = 0;
  return true;
}

void Server::drop_snapshot(Subscriber& s, Clock::time_point now) {
  s.due = now + s.interval;
  ++s.dropped;
  std::lock_guard lock(stats_mutex_);
  ++stats_.snapshots_dropped;
}

void Server::offer(Subscriber& s, const Sample& sample, Clock::time_point now) {
  s.due = now + s.interval;
  Snapshot snap =
      s.maker.make(sample.metrics, sample.tasks,
                   std::chrono::duration_cast<std::chrono::nanoseconds>(now - started_));
  snap.runtime.dropped_snapshots = s.dropped;
  std::string line = to_json(snap);
  line += '\n';
  if (line.size() > options_.max_buffer) {
    drop_snapshot(s, now);
    if (!s.once) return;
    line = error_line("the snapshot (" + std::to_string(line.size()) +
                      " bytes) is larger than the console's buffer");
  }
  {
    std::lock_guard lock(stats_mutex_);
    ++stats_.snapshots_sent;
    stats_.buffered_high_water = std::max(stats_.buffered_high_water, line.size());
  }
  s.out = std::move(line);
  s.sent = 0;
  if (s.once) s.close_when_sent = true;
  if (!flush(s)) s.closed = true;
}

}  // namespace spool::console
